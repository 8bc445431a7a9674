package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// stdinMax is how much piped input a prompt takes.
const stdinMax = 256 << 10

// withStdin adds what was piped to a one-shot run to its prompt, as a
// <stdin> block after it: `git diff | lite-agent "review this"`. A
// terminal, /dev/null and empty input add nothing. Input past stdinMax is
// cut, and the user told.
func withStdin(prompt string, std IO) (string, error) {
	if std.Interactive || std.Stdin == nil {
		return prompt, nil
	}
	if f, ok := std.Stdin.(*os.File); ok {
		fi, err := f.Stat()
		if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return prompt, nil
		}
	}
	buf := make([]byte, stdinMax+1)
	n, err := io.ReadFull(std.Stdin, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", fmt.Errorf("read standard input: %w", err)
	}
	if n == 0 {
		return prompt, nil
	}
	data := buf[:min(n, stdinMax)]
	if n > stdinMax {
		fmt.Fprintf(std.Stderr, "standard input cut to its first %d KiB\n", stdinMax>>10)
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return prompt + "\n\n<stdin>\n" + text + "</stdin>", nil
}

// expandPrompt attaches the files a prompt names with @path, telling the
// user what it could not attach.
func expandPrompt(ctx context.Context, e *env, prompt string, stderr io.Writer) string {
	expanded, notes := e.agent.ExpandMentions(ctx, prompt)
	for _, n := range notes {
		fmt.Fprintln(stderr, n)
	}
	return expanded
}
