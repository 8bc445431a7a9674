package file

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/klauspost/compress/zstd"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// DefaultMaxEventBytes is the default limit on one event's data.
const DefaultMaxEventBytes = 16 << 20

// Encodings for Options.Encoding.
const (
	EncodingJSON = "json" // each event's JSON payload stored as is (the default)
	EncodingZstd = "zstd" // each record compressed with zstd
)

// Options configure a Store. The zero value (or nil) means defaults.
type Options struct {
	// Encoding is how new records are written: EncodingJSON (the default)
	// or EncodingZstd. Every record says how it is encoded, so a store
	// reads logs written with either setting.
	Encoding string
	// ReadOnly opens the store without creating or changing anything: no
	// torn-tail repair, no index rewrite. Writes return checkpoint.ErrReadOnly.
	ReadOnly bool
	// MaxEventBytes limits one event's data; 0 means DefaultMaxEventBytes.
	// A larger event is checkpoint.ErrTooLarge.
	MaxEventBytes int
}

// Store is a checkpoint.Checkpointer keeping each session in an append-only
// log file under a root directory. It is safe for concurrent use by several
// goroutines and by several processes on one host (flock). The on-disk format
// is described in the package documentation.
type Store struct {
	root     string
	readOnly bool
	enc      byte
	maxEvent int
	boot     string

	zmu  sync.Mutex
	zenc *zstd.Encoder
	zdec *zstd.Decoder

	mu      sync.Mutex
	closed  bool
	calls   sync.WaitGroup
	handles map[string]*handle
	nss     map[string]*nsIndex
	checked map[string]fileID // log files whose every frame this process checked
}

var _ checkpoint.Checkpointer = (*Store)(nil)

// formatFile names the file that marks a directory as a store.
const (
	formatFile    = "FORMAT"
	formatContent = "lite-agent file store\nformat 1\n"
	idsDir        = "ids"
	nsDir         = "ns"
	maxIdleLogs   = 64 // open log files kept between appends
)

// Open opens (creating it unless opts.ReadOnly) the store rooted at root.
// nil opts means defaults.
//
// It fails with a message naming the path and what to do when root is not a
// directory, cannot be created or written, or holds another program's
// files. A read-only open of a root that does not exist fails with an error
// wrapping fs.ErrNotExist.
func Open(root string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if root == "" {
		return nil, fmt.Errorf("open file store: %w: empty root directory; pass the directory to keep sessions in", checkpoint.ErrInvalid)
	}
	if !lockSupported {
		return nil, fmt.Errorf("open file store %s: %w", root, errNoLockSupport)
	}
	s := &Store{
		root:     root,
		readOnly: o.ReadOnly,
		maxEvent: o.MaxEventBytes,
		boot:     bootID(),
		handles:  map[string]*handle{},
		nss:      map[string]*nsIndex{},
		checked:  map[string]fileID{},
	}
	switch o.Encoding {
	case "", EncodingJSON:
		s.enc = encRaw
	case EncodingZstd:
		s.enc = encZstd
	default:
		return nil, fmt.Errorf("open file store %s: %w: unknown encoding %q; use %q or %q", root, checkpoint.ErrInvalid, o.Encoding, EncodingJSON, EncodingZstd)
	}
	switch {
	case s.maxEvent == 0:
		s.maxEvent = DefaultMaxEventBytes
	case s.maxEvent < 0:
		return nil, fmt.Errorf("open file store %s: %w: negative MaxEventBytes %d", root, checkpoint.ErrInvalid, s.maxEvent)
	}
	if err := s.prepareRoot(); err != nil {
		return nil, err
	}
	return s, nil
}

var errNoLockSupport = errors.New("this system has no flock; use the sqlite backend")

// prepareRoot checks the root directory and, unless read-only, creates the
// store's skeleton in it.
func (s *Store) prepareRoot() error {
	fi, err := os.Stat(s.root)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("open file store %s: not a directory (a file is in the way); move the file or choose another directory for sessions", s.root)
	case errors.Is(err, fs.ErrNotExist) && s.readOnly:
		return fmt.Errorf("open file store %s read-only: %w (no sessions were ever saved there; check the path)", s.root, fs.ErrNotExist)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(s.root, 0o700); err != nil {
			return fmt.Errorf("open file store: cannot create %s: %w; choose a directory you can write to, or open it read-only", s.root, unwrapPath(err))
		}
		if err := syncDir(filepath.Dir(s.root)); err != nil {
			return fmt.Errorf("open file store %s: %w", s.root, err)
		}
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("open file store: cannot create %s: a file is in the way of one of its parent directories; choose a directory you can write to, or move the file", s.root)
	case err != nil:
		return fmt.Errorf("open file store %s: %w", s.root, err)
	}
	if err := s.checkFormat(); err != nil {
		return err
	}
	for _, d := range []string{idsDir, nsDir} {
		p := filepath.Join(s.root, d)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return fmt.Errorf("open file store %s: %s is not a directory (a file is in the way); move it aside or choose another directory for sessions", s.root, p)
		}
	}
	if s.readOnly {
		return nil
	}
	created := false
	for _, d := range []string{idsDir, nsDir} {
		p := filepath.Join(s.root, d)
		err := os.Mkdir(p, 0o700)
		switch {
		case err == nil:
			created = true
		case errors.Is(err, fs.ErrExist):
		default:
			return fmt.Errorf("open file store %s: cannot create %s: %w; make the directory writable, or open the store read-only", s.root, p, unwrapPath(err))
		}
	}
	// Prove the store is writable now rather than at the first append.
	probe, err := os.CreateTemp(s.root, ".probe-*")
	if err != nil {
		return fmt.Errorf("open file store %s: the directory is not writable (%w); make it writable, or open the store read-only", s.root, unwrapPath(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	if _, err := os.Stat(filepath.Join(s.root, formatFile)); errors.Is(err, fs.ErrNotExist) {
		if err := writeFileAtomic(filepath.Join(s.root, formatFile), []byte(formatContent)); err != nil {
			return fmt.Errorf("open file store %s: %w", s.root, err)
		}
		created = true
	}
	if created {
		if err := syncDir(s.root); err != nil {
			return fmt.Errorf("open file store %s: %w", s.root, err)
		}
	}
	return nil
}

// checkFormat refuses a root that holds files of another program or of a
// newer store format.
func (s *Store) checkFormat() error {
	p := filepath.Join(s.root, formatFile)
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("open file store %s: %w", s.root, err)
	case string(b) == formatContent:
		return nil
	case strings.HasPrefix(string(b), "lite-agent file store\n"):
		var v int
		if _, err := fmt.Sscanf(string(b), "lite-agent file store\nformat %d\n", &v); err == nil && v > 1 {
			return fmt.Errorf("open file store %s: %s says it was %w", s.root, p, &session.NewerError{Format: "store format", Version: v, Known: 1})
		}
		return fmt.Errorf("open file store %s: written by a newer lite-agent (%s says %q); upgrade lite-agent to use it", s.root, p, strings.TrimSpace(string(b)))
	default:
		return fmt.Errorf("open file store %s: %s is not a lite-agent store marker; choose an empty directory for sessions", s.root, p)
	}
}

// unwrapPath drops the *fs.PathError wrapper, whose path the caller's
// message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Close waits for calls in progress, then releases open files. Later calls
// return checkpoint.ErrClosed; closing again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.calls.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.handles {
		h.drop()
	}
	for _, n := range s.nss {
		n.close()
	}
	s.zmu.Lock()
	defer s.zmu.Unlock()
	if s.zenc != nil {
		s.zenc.Close()
	}
	if s.zdec != nil {
		s.zdec.Close()
	}
	return nil
}

// enter registers a call in progress; it fails once the store is closed.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return checkpoint.ErrClosed
	}
	s.calls.Add(1)
	return nil
}

func (s *Store) leave() { s.calls.Done() }

// maxIDLen bounds session ids so that every file name derived from one
// ("<id>.log.tmp") fits in 255 bytes.
const maxIDLen = 200

// checkID rejects session ids that are not safe file names.
func checkID(op, id string) error {
	bad := id == "" || len(id) > maxIDLen || id[0] == '.'
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')
	}
	if bad {
		return fmt.Errorf("%s: %w: session id %q cannot be used as a file name; use 1 to %d letters, digits, '-', '_' or '.', not starting with '.'", op, checkpoint.ErrInvalid, id, maxIDLen)
	}
	return nil
}

// folderFor maps a namespace (often an absolute workdir path) to the name of
// its folder: a readable part from its last path element, and a hash of the
// whole string so that distinct namespaces never share a folder.
func folderFor(namespace string) string {
	base := strings.TrimRight(namespace, `/\`)
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	base = strings.TrimLeft(string(b), ".")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		base = "ns"
	}
	sum := sha256.Sum256([]byte(namespace))
	return base + "-" + hex.EncodeToString(sum[:6])
}

func (s *Store) nsPath(folder string) string { return filepath.Join(s.root, nsDir, folder) }

func (s *Store) logPath(folder, id string) string {
	return filepath.Join(s.root, nsDir, folder, id+".log")
}

func (s *Store) mappingPath(id string) string { return filepath.Join(s.root, idsDir, id) }

// mappingTarget is what ids/<id> points to.
func mappingTarget(folder, id string) string { return "../" + nsDir + "/" + folder + "/" + id + ".log" }

// lookup returns the folder of session id from its mapping; ok is false
// when the session has no mapping.
func (s *Store) lookup(id string) (folder, target string, ok bool, err error) {
	target, err = os.Readlink(s.mappingPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("find session %s: %w", id, err)
	}
	rest, found := strings.CutPrefix(target, "../"+nsDir+"/")
	folder, name, found2 := strings.Cut(rest, "/")
	if !found || !found2 || name != id+".log" || folder == "" || strings.ContainsAny(folder, `/\`) {
		return "", "", false, fmt.Errorf("find session %s: %w: %s points to %q, not to a log of this store; remove it (the session's log, if any, stays in %s)", id, ErrCorrupt, s.mappingPath(id), target, filepath.Join(s.root, nsDir))
	}
	return folder, target, true, nil
}

// ns returns the in-memory index of a namespace folder.
func (s *Store) ns(folder string) *nsIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nss[folder]
	if n == nil {
		n = newNSIndex(s, folder)
		s.nss[folder] = n
	}
	return n
}

// ensureNamespace creates the folder of a namespace if needed.
func (s *Store) ensureNamespace(folder, namespace string) error {
	dir := s.nsPath(folder)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(s.root, nsDir), 0o700); err != nil {
		return fmt.Errorf("create namespace folder: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create namespace folder: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "namespace"), []byte(namespace)); err != nil {
		return fmt.Errorf("create namespace folder: %w", err)
	}
	if err := createIndex(filepath.Join(dir, indexName), s.boot); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create namespace folder: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Join(s.root, nsDir))
}

// head is Head before the refold; it returns the session's summary from its namespace index, without
// reading the log.
func (s *Store) head(ctx context.Context, id string) (session.Summary, error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, err
	}
	defer s.leave()
	if err := checkID("head", id); err != nil {
		return session.Summary{}, err
	}
	folder, _, ok, err := s.lookup(id)
	if err != nil {
		return session.Summary{}, err
	}
	if !ok {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	sum, ok, err := s.ns(folder).head(ctx, id)
	if err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	if !ok {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	return sum, nil
}

// list is List before the refold; it returns the summaries of a namespace's sessions (of every namespace
// when namespace is ""), most recently updated first, from the namespace
// indexes.
func (s *Store) list(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	var folders []string
	if namespace != "" {
		folders = []string{folderFor(namespace)}
	} else {
		des, err := os.ReadDir(filepath.Join(s.root, nsDir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("list: %w", err)
		}
		for _, de := range des {
			if de.IsDir() {
				folders = append(folders, de.Name())
			}
		}
	}
	var out []session.Summary
	for _, f := range folders {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := os.Stat(s.nsPath(f)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		got, err := s.ns(f).list(ctx, namespace, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.nsPath(f), err)
		}
		if len(folders) == 1 {
			return got, nil
		}
		out = append(out, got...)
	}
	slices.SortStableFunc(out, compareSummaries)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// compareSummaries orders most recently updated first, then by id.
func compareSummaries(a, b session.Summary) int { return compareSummaryPtrs(&a, &b) }

func compareSummaryPtrs(a, b *session.Summary) int {
	if c := b.Updated.Compare(a.Updated); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// cloneSummary returns a copy sharing nothing mutable with s.
func cloneSummary(s session.Summary) session.Summary {
	s.Open = slices.Clone(s.Open)
	if s.Parent != nil {
		p := *s.Parent
		s.Parent = &p
	}
	return s
}

// writeFileAtomic writes a small file durably: temp file, fsync, rename.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// syncDir makes a directory's entries (created, renamed, removed files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// encoder returns the shared zstd encoder. The fastest level: a commit's
// payload is small, and compressing it delays a durable Append.
func (s *Store) encoder() (*zstd.Encoder, error) {
	s.zmu.Lock()
	defer s.zmu.Unlock()
	if s.zenc == nil {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderCRC(false)) // frames carry their own CRC32C
		if err != nil {
			return nil, err
		}
		s.zenc = e
	}
	return s.zenc, nil
}

// decoder returns the shared zstd decoder.
func (s *Store) decoder() (*zstd.Decoder, error) {
	s.zmu.Lock()
	defer s.zmu.Unlock()
	if s.zdec == nil {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxFramePayload), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return nil, err
		}
		s.zdec = d
	}
	return s.zdec, nil
}

// rawPayload returns a frame's decoded payload: the stored bytes for a raw
// frame, a new decompressed slice for a zstd frame.
func (s *Store) rawPayload(h frameHeader, stored []byte) ([]byte, error) {
	if h.enc == encRaw {
		return stored, nil
	}
	d, err := s.decoder()
	if err != nil {
		return nil, err
	}
	raw, err := d.DecodeAll(stored, make([]byte, 0, h.rlen))
	if err != nil {
		return nil, err
	}
	if len(raw) != int(h.rlen) {
		return nil, fmt.Errorf("decompressed %d bytes, header says %d", len(raw), h.rlen)
	}
	return raw, nil
}
