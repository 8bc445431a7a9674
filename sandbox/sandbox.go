package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Mode is how much a command may change.
type Mode string

// Modes.
const (
	ReadOnly       Mode = "read-only"
	WorkspaceWrite Mode = "workspace-write"
	Off            Mode = "off"
)

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ReadOnly, WorkspaceWrite, Off:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: use read-only, workspace-write or off", s)
}

// launcherArg, as argv[1], makes a binary act as the launcher.
const launcherArg = "__lite-agent-sandbox"

// Policy is what a sandboxed command may do. Build it with New.
type Policy struct {
	mode      Mode
	writable  []string // absolute paths writes are allowed under
	noNetwork bool
	launcher  string // the binary re-executed as the launcher
	netns     bool   // a network namespace can be made
	userns    bool   // it needs a user namespace (not root)
}

// Options tunes New. The zero value (or nil) allows writes only under the
// workdir and the temp dir, keeps the network, and re-executes the
// running binary as the launcher.
type Options struct {
	// AllowPaths are extra directories writes are allowed under in
	// workspace-write mode.
	AllowPaths []string
	// NoNetwork cuts the command off the network.
	NoNetwork bool
	// Require makes New fail when the kernel cannot apply the policy
	// (no Landlock, or no network namespace with NoNetwork), instead of
	// reporting it with a *DegradedError next to a usable policy.
	Require bool
	// Launcher is the binary re-executed as the launcher; "" is the
	// running one (os.Executable). It must call Launch first in main.
	Launcher string
}

// DegradedError says what a policy cannot enforce on this kernel. New
// returns it with a usable (weaker) policy unless Options.Require is set.
type DegradedError struct{ Missing []string }

func (e *DegradedError) Error() string {
	return fmt.Sprintf("the sandbox cannot be fully applied on this kernel: %v; commands run with what is available (set require = true in [sandbox] to refuse instead)", e.Missing)
}

// New returns the policy for mode in workdir. Off gives a policy that
// confines nothing. See DegradedError for kernels that lack what it needs.
func New(mode Mode, workdir string, opts *Options) (*Policy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	p := &Policy{mode: mode, noNetwork: o.NoNetwork && mode != Off, launcher: o.Launcher}
	if mode == Off {
		return p, nil
	}
	if p.launcher == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: find the launcher: %w", err)
		}
		p.launcher = exe
	}
	if mode == WorkspaceWrite {
		for _, d := range append([]string{workdir, os.TempDir()}, o.AllowPaths...) {
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				abs = real
			}
			p.writable = append(p.writable, abs)
		}
	}
	var missing []string
	if abi := ABI(); abi < 1 {
		missing = append(missing, "Landlock (the kernel has none, or it is disabled)")
	}
	if p.noNetwork {
		p.userns = os.Geteuid() != 0
		if p.netns = netnsWorks(p.userns); !p.netns {
			missing = append(missing, "a network namespace (not permitted here)")
		}
	}
	if len(missing) > 0 {
		err := &DegradedError{Missing: missing}
		if o.Require {
			return nil, err
		}
		return p, err
	}
	return p, nil
}

// ABI returns the kernel's Landlock ABI version, 0 when it has none.
func ABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Name is the mode, as recorded with each command.
func (p *Policy) Name() string { return string(p.mode) }

// Wrap rewrites cmd, not yet started, to start through the launcher with
// the policy applied. It keeps cmd's Dir, Env, files and SysProcAttr.
func (p *Policy) Wrap(cmd *exec.Cmd) error {
	if p.mode == Off {
		return nil
	}
	spec, err := json.Marshal(launchSpec{Mode: p.mode, Writable: p.writable, NoNetwork: p.noNetwork})
	if err != nil {
		return err
	}
	args := append([]string{p.launcher, launcherArg, string(spec), "--"}, cmd.Args...)
	cmd.Path, cmd.Args, cmd.Err = p.launcher, args, nil
	if p.netns {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		setNetns(cmd.SysProcAttr, p.userns)
	}
	return nil
}

// launchSpec is the policy as the launcher reads it from argv.
type launchSpec struct {
	Mode      Mode     `json:"mode"`
	Writable  []string `json:"writable,omitempty"`
	NoNetwork bool     `json:"no_network,omitempty"`
}

// Launch acts as the launcher when the binary was started as one: it
// applies the policy to itself and executes the command, never returning.
// Otherwise it returns at once. Call it first thing in main.
func Launch() {
	if len(os.Args) < 5 || os.Args[1] != launcherArg || os.Args[3] != "--" {
		return
	}
	var s launchSpec
	if err := json.Unmarshal([]byte(os.Args[2]), &s); err != nil {
		fail(fmt.Errorf("bad policy: %w", err))
	}
	if err := s.apply(); err != nil {
		fail(err)
	}
	argv := os.Args[4:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fail(err)
	}
	fail(syscall.Exec(path, argv, os.Environ()))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "lite-agent sandbox: %v\n", err)
	os.Exit(126)
}

// devices are the files every mode may write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"}

// apply restricts the running process (and what it will execute). A
// kernel without Landlock leaves it unrestricted (New already said so).
func (s launchSpec) apply() error {
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
	}
	if len(s.Writable) > 0 {
		rules = append(rules, landlock.RWDirs(s.Writable...).WithRefer().IgnoreIfMissing())
	}
	cfg := landlock.V5.BestEffort()
	if !s.NoNetwork {
		return cfg.RestrictPaths(rules...)
	}
	// No network rule: TCP connect and bind are refused where Landlock
	// handles them.
	return cfg.Restrict(rules...)
}

var netnsOnce = sync.OnceValue(func() [2]bool {
	try := func(userns bool) bool {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		setNetns(cmd.SysProcAttr, userns)
		return cmd.Run() == nil
	}
	return [2]bool{try(false), try(true)}
})

// netnsWorks reports whether a command can be started in a new network
// namespace (through a user namespace when userns), trying once.
func netnsWorks(userns bool) bool {
	r := netnsOnce()
	if userns {
		return r[1]
	}
	return r[0]
}
