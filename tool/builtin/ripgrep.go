package builtin

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/tool"
)

// rgMessage is the part of one line of `rg --json` that grep reads: a
// "match" message's file, line number and line. A field ripgrep could not
// give as UTF-8 comes as base64 bytes instead of text.
type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) value() []byte {
	if t.Text != nil {
		return []byte(*t.Text)
	}
	b, _ := base64.StdEncoding.DecodeString(t.Bytes)
	return b
}

// ripgrep searches the directory at loc with rg, when it is on PATH, into
// g. It reports false when rg is missing or failed before it matched
// anything (a pattern Go accepts and rg does not, say): the caller then
// searches in Go. rg runs in the directory, reads the same ignore files as
// package walk (and those above the workdir, which walk does not), skips
// hidden names unless asked, and never follows symlinks.
func ripgrep(ctx context.Context, g *grepRun, loc tool.Loc, in grepInput) bool {
	rg, err := exec.LookPath("rg")
	if err != nil {
		return false
	}
	args := []string{"--json", "--no-config", "--no-require-git", "--no-ignore-global", "--no-messages",
		"--crlf", "-g", "!.git"}
	if in.CaseInsensitive {
		args = append(args, "-i")
	}
	if in.Hidden {
		args = append(args, "--hidden")
	}
	if in.NoIgnore {
		args = append(args, "--no-ignore")
	}
	// -g globs would override the ignore files: a name include is a file
	// type instead, and a path include is applied to rg's results.
	include := filepath.ToSlash(in.Include)
	pathInclude := strings.Contains(include, "/")
	if include != "" && !pathInclude {
		args = append(args, "--type-add", "include:"+include, "-t", "include")
	}
	args = append(args, "-e", in.Pattern)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, rg, args...)
	cmd.Dir = filepath.Join(loc.FS.Name(), loc.Name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m rgMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Type != "match" {
			continue
		}
		rel := filepath.ToSlash(string(m.Data.Path.value()))
		if pathInclude && !includes(include, rel) {
			continue
		}
		abs := filepath.Join(cmd.Dir, rel)
		if !g.add(displayJoin(loc.Path, rel), statTime(abs), m.Data.LineNumber, m.Data.Lines.value()) {
			cancel() // capped: the rest is not read
			break
		}
	}
	err = cmd.Wait()
	if g.full || ctx.Err() != nil {
		return true
	}
	// Exit status 1 is "no match"; 2 with nothing matched is an error
	// (a pattern rg rejects): search in Go instead.
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && g.matches == 0 {
		return false
	}
	return true
}

// statTime returns a lazy modification time of the file at p.
func statTime(p string) func() time.Time {
	return func() time.Time {
		fi, err := os.Stat(p)
		if err != nil {
			return time.Time{}
		}
		return fi.ModTime()
	}
}
