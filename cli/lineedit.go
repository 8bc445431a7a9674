package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"
	"github.com/chzyer/readline"

	liteagent "github.com/lite-agent/lite-agent"
)

// historyMax is how many prompts a workspace's history keeps.
const historyMax = 1000

// lineEditor reads the line mode's input on a terminal with line editing
// and history (github.com/chzyer/readline): the arrows move in the line
// and recall earlier prompts, Ctrl-R searches them. The prompts and
// commands typed (not the answers to questions) are kept per workspace
// under the state directory. A line is read only when the line mode asks
// for one (ask), so the editor draws only while the line mode waits; what
// is printed meanwhile goes through writer, which redraws the line below.
type lineEditor struct {
	rl    *readline.Instance
	lines chan string // closed at end of input (Ctrl-D on an empty line)
	want  chan lineRequest

	mu      sync.Mutex
	reading bool // a line is being edited
	history bool // it is a prompt, kept in the history
}

type lineRequest struct {
	prompt  string
	history bool
}

// editsLines reports whether std's input is a terminal the line editor can
// run on (not a pipe, a file or a test's reader).
func editsLines(std IO) bool {
	f, ok := std.Stdin.(*os.File)
	return ok && std.Interactive && term.IsTerminal(f.Fd())
}

// historyFile is where the line mode keeps workdir's prompts:
// STATE/history/HASH, HASH naming the canonical workdir.
func historyFile(workdir string) (string, error) {
	state, err := liteagent.StateDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(workdir))
	dir := filepath.Join(state, "history")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, hex.EncodeToString(sum[:12]))
	// Prompts may hold what the user would not share: the file is the
	// user's alone (readline would create it 0666 less the umask).
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	return path, f.Close()
}

// newLineEditor starts an editor on std's terminal with the history of
// workdir. A history that cannot be kept is said on stderr, and the
// editor runs without one.
func newLineEditor(std IO, workdir string) (*lineEditor, error) {
	hist, err := historyFile(workdir)
	if err != nil {
		io.WriteString(std.Stderr, "lite-agent: the prompt history is not kept: "+oneLine(err.Error())+"\n")
		hist = ""
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt: "> ", HistoryFile: hist, HistoryLimit: historyMax, DisableAutoSaveHistory: true,
		HistorySearchFold: true, Stdout: std.Stderr, Stderr: std.Stderr,
	})
	if err != nil {
		return nil, err
	}
	ed := &lineEditor{rl: rl, lines: make(chan string), want: make(chan lineRequest, 1)}
	go ed.loop()
	return ed, nil
}

// ask asks for the next line with prompt; history keeps it in the
// history. While a line is already being edited, its prompt changes.
func (ed *lineEditor) ask(prompt string, history bool) {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	ed.history = history
	if ed.reading {
		ed.rl.SetPrompt(prompt)
		ed.rl.Refresh()
		return
	}
	ed.reading = true
	ed.want <- lineRequest{prompt: prompt, history: history}
}

func (ed *lineEditor) loop() {
	defer close(ed.lines)
	for req := range ed.want {
		ed.rl.SetPrompt(req.prompt)
		line, err := ed.rl.Readline()
		ed.mu.Lock()
		ed.reading = false
		keep := ed.history
		ed.mu.Unlock()
		switch {
		case errors.Is(err, readline.ErrInterrupt) && strings.TrimSpace(line) != "":
			// Ctrl-C on a typed line drops it, as shells do.
			ed.ask(req.prompt, req.history)
			continue
		case errors.Is(err, readline.ErrInterrupt):
			// The terminal is raw while a line is edited, so Ctrl-C is a
			// key: it does what the signal does everywhere else (cancel
			// the turn; at the prompt, quit).
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			continue
		case err != nil:
			return
		}
		if keep && strings.TrimSpace(line) != "" {
			ed.rl.SaveHistory(line)
		}
		ed.lines <- line
	}
}

// writer wraps w, the terminal: what is written while a line is edited
// appears above it, and the line is drawn again below.
func (ed *lineEditor) writer(w io.Writer) io.Writer { return editedWriter{ed, w} }

type editedWriter struct {
	ed *lineEditor
	w  io.Writer
}

func (x editedWriter) Write(b []byte) (int, error) {
	x.ed.mu.Lock()
	reading := x.ed.reading
	x.ed.mu.Unlock()
	if !reading {
		return x.w.Write(b)
	}
	x.ed.rl.Clean()
	n, err := x.w.Write(b)
	x.ed.rl.Refresh()
	return n, err
}

// close restores the terminal.
func (ed *lineEditor) close() { ed.rl.Close() }

// splitQuestion splits a question at its last line, which the editor
// shows as the prompt of the answer. A long last line is printed, and the
// answer typed below it after "> ": the editor redraws its prompt, and a
// prompt wider than the terminal would be drawn twice.
func splitQuestion(q string) (head, last string) {
	i := strings.LastIndexByte(q, '\n')
	head, last = q[:i+1], q[i+1:]
	if utf8.RuneCountInString(last) > 40 {
		return q + "\n", "> "
	}
	return head, last
}
