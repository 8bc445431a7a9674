package liteagent

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/lite-agent/lite-agent/tool/walk"
)

// Limits of what a prompt's mentions attach.
const (
	mentionMaxBytes   = 256 << 10 // of one file
	mentionMaxEntries = 500       // of one directory listing
)

// mentionRE finds "@path" at the start of the prompt or after a space.
var mentionRE = regexp.MustCompile(`(^|\s)@([^\s@]+)`)

// ExpandMentions attaches what prompt names with @path: each file that
// exists in the workdir (or a directory the agent may reach) is appended
// as a <file path="…"> block with its text, each directory as a
// <directory path="…"> block listing what is in it (as glob sees it:
// hidden and ignored names left out). A path that does not exist is left
// as text (it may be a name, not a file). Notes say what was not attached
// and why (outside the workdir, binary, cut at a size), for the user; the
// prompt itself is never changed, only followed by the blocks.
func (a *Agent) ExpandMentions(ctx context.Context, prompt string) (expanded string, notes []string) {
	var blocks []string
	seen := map[string]bool{}
	for _, m := range mentionRE.FindAllStringSubmatch(prompt, -1) {
		p := strings.TrimRight(m[2], ".,;:!?)\"'")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		block, note := a.attach(ctx, p)
		if block != "" {
			blocks = append(blocks, block)
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if len(blocks) == 0 {
		return prompt, notes
	}
	return prompt + "\n\n" + strings.Join(blocks, "\n\n"), notes
}

// attach is the block for one mention, or why there is none.
func (a *Agent) attach(ctx context.Context, p string) (block, note string) {
	loc, err := a.root.Locate(p)
	if err != nil {
		return "", fmt.Sprintf("@%s not attached: %v", p, err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	switch {
	case err != nil:
		return "", "" // not a file: left as text
	case fi.IsDir():
		return a.listing(ctx, loc.Path, loc.FS.FS(), loc.Name)
	case !fi.Mode().IsRegular():
		return "", fmt.Sprintf("@%s not attached: not a regular file", p)
	}
	f, err := loc.FS.Open(loc.Name)
	if err != nil {
		return "", fmt.Sprintf("@%s not attached: %v", p, err)
	}
	defer f.Close()
	buf := make([]byte, mentionMaxBytes+1)
	n, _ := io.ReadFull(f, buf)
	data := buf[:n]
	if strings.ContainsRune(string(data), 0) {
		return "", fmt.Sprintf("@%s not attached: a binary file", p)
	}
	if n > mentionMaxBytes {
		data = data[:mentionMaxBytes]
		note = fmt.Sprintf("@%s attached in part: its first %d KiB of %d", p, mentionMaxBytes>>10, fi.Size()>>10)
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("<file path=%q>\n%s</file>", loc.Path, text), note
}

// listing is a directory's block: its entries, directories with a "/".
func (a *Agent) listing(ctx context.Context, display string, fsys fs.FS, name string) (block, note string) {
	var names []string
	more := 0
	start := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	err := walk.Walk(ctx, fsys, start, nil, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == start {
			return nil
		}
		if len(names) == mentionMaxEntries {
			more++
		} else if d.IsDir() {
			names = append(names, d.Name()+"/")
		} else {
			names = append(names, d.Name())
		}
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Sprintf("@%s not attached: %v", display, err)
	}
	if more > 0 {
		names = append(names, fmt.Sprintf("… %d more", more))
	}
	return fmt.Sprintf("<directory path=%q>\n%s\n</directory>", display, strings.Join(names, "\n")), ""
}
