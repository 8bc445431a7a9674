package checkpointtest_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gofrs/flock"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// refStore is a deliberately simple persistent checkpointer that exists only
// to run the suite's persistent checks (reopen, several processes, crashes)
// against something known to be right. It keeps one file of JSON lines per
// session in a directory and serializes every call, in every process, with
// one flock on the directory's lock file. Every call reads the whole log, and
// an append cuts a torn last line off before writing. It never fsyncs: the
// suite kills processes, not machines, and what a killed process wrote is
// in the page cache for the next one to read.
type refStore struct {
	dir string
	mu  sync.RWMutex // held shared by calls, exclusively by Close
	// closed is set by Close under mu.
	closed bool
}

// refMaxEventBytes is refStore's limit on one event's data.
const refMaxEventBytes = 2 << 20

var _ checkpoint.Checkpointer = (*refStore)(nil)

func openRef(dir string) (checkpoint.Checkpointer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &refStore{dir: dir}, nil
}

// begin admits a call unless the store is closed; the returned function ends
// it.
func (s *refStore) begin(op, id string) (func(), error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, fmt.Errorf("%s %s: %w", op, id, checkpoint.ErrClosed)
	}
	return s.mu.RUnlock, nil
}

// lock takes the directory lock, shared or exclusive.
func (s *refStore) lock(exclusive bool) (*flock.Flock, error) {
	l := flock.New(filepath.Join(s.dir, "lock"))
	var err error
	if exclusive {
		err = l.Lock()
	} else {
		err = l.RLock()
	}
	return l, err
}

func (s *refStore) path(id string) string { return filepath.Join(s.dir, id+".log") }

// load reads a log. good is the length of the file's valid prefix.
func (s *refStore) load(id string) (events []session.Event, good, size int, err error) {
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, 0, checkpoint.ErrNotFound
	}
	if err != nil {
		return nil, 0, 0, err
	}
	for good < len(data) {
		nl := bytes.IndexByte(data[good:], '\n')
		if nl < 0 {
			break
		}
		var e session.Event
		if json.Unmarshal(data[good:good+nl], &e) != nil || e.Seq != int64(len(events)+1) {
			break
		}
		events = append(events, e)
		good += nl + 1
	}
	if len(events) == 0 {
		return nil, 0, len(data), checkpoint.ErrNotFound
	}
	return events, good, len(data), nil
}

func encode(events []session.Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

func (s *refStore) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if strings.ContainsAny(id, `/\.`) {
		return 0, fmt.Errorf("append %q: %w: ids may not contain '/', '\\' or '.'", id, checkpoint.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	prepared, err := checkpoint.Prepare(id, expectedHead, events, refMaxEventBytes)
	if err != nil {
		return 0, err
	}
	end, err := s.begin("append", id)
	if err != nil {
		return 0, err
	}
	defer end()
	l, err := s.lock(true)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	old, good, size, err := s.load(id)
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return 0, err
	}
	if head := int64(len(old)); head != expectedHead {
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
	}
	if good < size {
		if err := os.Truncate(s.path(id), int64(good)); err != nil {
			return 0, err
		}
	}
	f, err := os.OpenFile(s.path(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	_, err = f.Write(encode(prepared))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	return expectedHead + int64(len(prepared)), nil
}

// get loads a log under the shared lock.
func (s *refStore) get(op, id string) ([]session.Event, error) {
	end, err := s.begin(op, id)
	if err != nil {
		return nil, err
	}
	defer end()
	l, err := s.lock(false)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	events, _, _, err := s.load(id)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, err)
	}
	return events, nil
}

func (s *refStore) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		events, err := s.get("read", id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		for _, e := range events[min(max(fromSeq, 1)-1, int64(len(events))):] {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (s *refStore) Head(ctx context.Context, id string) (session.Summary, error) {
	events, err := s.get("head", id)
	if err != nil {
		return session.Summary{}, err
	}
	return session.Summarize(id, events), nil
}

func (s *refStore) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	end, err := s.begin("list", namespace)
	if err != nil {
		return nil, err
	}
	defer end()
	l, err := s.lock(false)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	names, err := filepath.Glob(filepath.Join(s.dir, "*.log"))
	if err != nil {
		return nil, err
	}
	var out []session.Summary
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".log")
		events, _, _, err := s.load(id)
		if errors.Is(err, checkpoint.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum := session.Summarize(id, events)
		if (namespace == "" || sum.Namespace == namespace) && opts.Matches(sum) {
			out = append(out, sum)
		}
	}
	slices.SortFunc(out, func(a, b session.Summary) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID))
	})
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

func (s *refStore) Delete(ctx context.Context, id string) error {
	end, err := s.begin("delete", id)
	if err != nil {
		return err
	}
	defer end()
	l, err := s.lock(true)
	if err != nil {
		return err
	}
	defer l.Unlock()
	if _, _, _, err := s.load(id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return os.Remove(s.path(id))
}

func (s *refStore) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	end, err := s.begin("truncate", id)
	if err != nil {
		return 0, err
	}
	defer end()
	l, err := s.lock(true)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	events, _, _, err := s.load(id)
	if err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	head := int64(len(events))
	if head != expectedHead {
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
	}
	if keepThrough < 1 || keepThrough > head {
		return 0, fmt.Errorf("truncate %s: %w: keep through %d of %d", id, checkpoint.ErrInvalid, keepThrough, head)
	}
	tmp := s.path(id) + ".tmp"
	if err := os.WriteFile(tmp, encode(events[:keepThrough]), 0o644); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, s.path(id)); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	return keepThrough, nil
}

func (s *refStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
