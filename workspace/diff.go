package workspace

import "io/fs"

// Kind is what happened to a path between two manifests.
type Kind string

// Kinds of change.
const (
	Created Kind = "created"
	Changed Kind = "changed" // content (or the kind of file) differs
	Deleted Kind = "deleted"
	// ModeChanged: same content, other permission bits.
	ModeChanged Kind = "mode"
)

// Change is one path that differs between two manifests. Before is nil for
// a created path, After for a deleted one.
type Change struct {
	Path   string
	Kind   Kind
	Before *Entry
	After  *Entry
}

// Diff returns what differs from a to b, sorted by path: created,
// changed, deleted and mode-changed files and directories. Two files
// whose digests are both known compare by digest (a touch is no change);
// where one is not known they compare by stat.
func Diff(a, b *Manifest) []Change {
	var ae, be []Entry
	if a != nil {
		ae = a.Entries
	}
	if b != nil {
		be = b.Entries
	}
	var out []Change
	i, j := 0, 0
	for i < len(ae) || j < len(be) {
		switch {
		case j == len(be) || i < len(ae) && ae[i].Path < be[j].Path:
			out = append(out, Change{Path: ae[i].Path, Kind: Deleted, Before: &ae[i]})
			i++
		case i == len(ae) || be[j].Path < ae[i].Path:
			out = append(out, Change{Path: be[j].Path, Kind: Created, After: &be[j]})
			j++
		default:
			if k, ok := compare(ae[i], be[j]); ok {
				out = append(out, Change{Path: ae[i].Path, Kind: k, Before: &ae[i], After: &be[j]})
			}
			i++
			j++
		}
	}
	return out
}

// compare says how x became y, false when it did not change.
func compare(x, y Entry) (Kind, bool) {
	if x.Mode.Type() != y.Mode.Type() {
		return Changed, true
	}
	if x.IsDir() {
		if x.Mode != y.Mode {
			return ModeChanged, true
		}
		return "", false
	}
	same := x.Digest == y.Digest
	if x.Digest == "" || y.Digest == "" {
		same = x.Digest == y.Digest && x.Size == y.Size && x.MTime == y.MTime && x.Inode == y.Inode
	}
	switch {
	case !same:
		return Changed, true
	case x.Mode != y.Mode:
		return ModeChanged, true
	}
	return "", false
}

// Paths returns the paths of changes, in order.
func Paths(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// Perm is the permission bits of a mode, as restore writes them back.
func Perm(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}
