// Package usercmd loads the user's own slash commands: Markdown files in
// a project's .lite-agent/commands directory and in the user's
// configuration directory (~/.config/lite-agent/commands). The file
// review.md is the command /review; its text is the prompt sent, with
// $ARGUMENTS replaced by what was typed after the command. A project
// command shadows a user command of the same name, and Load says so.
//
// A file may start with a YAML front matter block (between two --- lines)
// giving a description and an argument-hint, shown by /help; it is not
// part of the prompt. Without one, the description is the first line of
// text.
package usercmd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v2"
)

// Scopes of a command: where its file is.
const (
	ScopeProject = "project"
	ScopeUser    = "user"
)

// maxFile is the largest command file read: a prompt, not a document.
const maxFile = 256 << 10

// Command is one user command.
type Command struct {
	Name         string // without the slash
	Path         string // its file
	Scope        string // ScopeProject or ScopeUser
	Description  string // one line, for /help
	ArgumentHint string // what to type after it, for /help ("" for none)
	Text         string // the prompt, $ARGUMENTS not yet replaced
}

// Prompt is the command's prompt for the arguments typed after it:
// $ARGUMENTS replaced by them, or, when the text has no $ARGUMENTS and
// arguments were given, the arguments after the text on a line of their
// own (so they are never lost).
func (c Command) Prompt(args string) string {
	args = strings.TrimSpace(args)
	if strings.Contains(c.Text, "$ARGUMENTS") {
		return strings.ReplaceAll(c.Text, "$ARGUMENTS", args)
	}
	if args == "" {
		return c.Text
	}
	return strings.TrimRight(c.Text, "\n") + "\n\n" + args
}

// Dir is a directory commands are read from.
type Dir struct {
	Path  string
	Scope string
}

// Dirs returns the command directories for workdir: the project's
// (workdir/.lite-agent/commands) and the user's (commands beside the
// user's config file, userConfig; "" for none).
func Dirs(workdir, userConfig string) []Dir {
	dirs := []Dir{{Path: filepath.Join(workdir, ".lite-agent", "commands"), Scope: ScopeProject}}
	if userConfig != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(filepath.Dir(userConfig), "commands"), Scope: ScopeUser})
	}
	return dirs
}

// validName is what a command file's name may be: a letter or digit,
// then letters, digits, -, _ and dots.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Load reads the *.md files of dirs, earlier directories shadowing later
// ones, and returns the commands sorted by name with notes for the user:
// a command shadowed, one named like a reserved (built-in) command, a
// file that cannot be a command. A missing directory is no error; an
// unreadable file is a note, and the other commands still load.
func Load(dirs []Dir, reserved []string) ([]Command, []string) {
	var out []Command
	var notes []string
	byName := map[string]Command{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				notes = append(notes, fmt.Sprintf("cannot read the commands in %s: %v", d.Path, err))
			}
			continue
		}
		for _, e := range entries {
			file := e.Name()
			name, ok := strings.CutSuffix(file, ".md")
			if !ok || e.IsDir() {
				continue
			}
			path := filepath.Join(d.Path, file)
			switch {
			case !validName.MatchString(name):
				notes = append(notes, fmt.Sprintf("%s is not a command: a command's name has letters, digits, -, _ and dots only", path))
				continue
			case slices.Contains(reserved, name):
				notes = append(notes, fmt.Sprintf("%s is not used: /%s is a built-in command (rename the file)", path, name))
				continue
			}
			if first, dup := byName[name]; dup {
				notes = append(notes, fmt.Sprintf("/%s of %s shadows the %s command %s", name, first.Path, d.Scope, path))
				continue
			}
			c, err := read(path, name, d.Scope)
			if err != nil {
				notes = append(notes, err.Error())
				continue
			}
			byName[name] = c
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out, notes
}

// Find returns the command named name, and whether there is one.
func Find(cmds []Command, name string) (Command, bool) {
	for _, c := range cmds {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// frontMatter is what a command file's YAML header may say.
type frontMatter struct {
	Description  string `yaml:"description"`
	ArgumentHint string `yaml:"argument-hint"`
}

func read(path, name, scope string) (Command, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Command{}, fmt.Errorf("cannot read command %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Command{}, fmt.Errorf("%s is not a command: it is not a regular file", path)
	}
	if fi.Size() > maxFile {
		return Command{}, fmt.Errorf("%s is not a command: it is %d bytes, over the %d KiB a command's prompt may be", path, fi.Size(), maxFile>>10)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Command{}, fmt.Errorf("cannot read command %s: %v", path, err)
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return Command{}, fmt.Errorf("%s is not a command: it is not UTF-8 text", path)
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	c := Command{Name: name, Path: path, Scope: scope}
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		head, body, found := strings.Cut(rest, "\n---\n")
		if !found {
			head, body, found = strings.Cut(rest, "\n---")
			found = found && strings.TrimSpace(body) == ""
		}
		if !found {
			return Command{}, fmt.Errorf("%s: its front matter (from the first ---) has no closing --- line", path)
		}
		var fm frontMatter
		if err := yaml.Unmarshal([]byte(head), &fm); err != nil {
			return Command{}, fmt.Errorf("%s: its front matter is not YAML: %v", path, err)
		}
		c.Description, c.ArgumentHint, text = oneLine(fm.Description), oneLine(fm.ArgumentHint), body
	}
	c.Text = strings.TrimSpace(text)
	if c.Text == "" {
		return Command{}, fmt.Errorf("%s is not a command: its prompt is empty", path)
	}
	if c.Description == "" {
		first, _, _ := strings.Cut(c.Text, "\n")
		c.Description = oneLine(strings.TrimLeft(first, "# "))
	}
	if r := []rune(c.Description); len(r) > 80 {
		c.Description = string(r[:79]) + "…"
	}
	return c, nil
}

// oneLine folds white space and drops control characters: descriptions
// are printed to a terminal.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
