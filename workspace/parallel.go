package workspace

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lite-agent/lite-agent/tool/walk"
)

// maxWorkers bounds the default Options.Workers: past a few goroutines the
// file system's locks, not the CPUs, set the pace.
const maxWorkers = 8

// workers is how many goroutines a Scan lists directories with.
func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return min(runtime.GOMAXPROCS(0), maxWorkers)
}

// parallelScan walks the tree below "." with up to workers goroutines,
// one directory at a time each, and gives exactly what the sequential walk
// (taker.tree) gives: the same entries in the same order, the same
// unreadable directories, Dir called for each directory before it is
// listed (but from several goroutines), Keep called once per content read
// (never two at once, in no fixed order).
type parallelScan struct {
	ctx  context.Context
	t    *taker
	sem  chan struct{} // a token per goroutine beyond the caller's
	wg   sync.WaitGroup
	n    atomic.Int64 // entries taken
	mu   sync.Mutex
	err  error // the first error, which ends the scan
	stop atomic.Bool
}

// listing is what one directory gave: its entries in the walk's order and,
// for each directory among them, what that gave.
type listing struct {
	entries    []Entry
	subs       []*listing
	unreadable bool
}

// scanParallel is Scan's walk with workers goroutines: it returns the
// entries in the sequential walk's order and the unreadable directories.
func (t *taker) scanParallel(ctx context.Context, workers int) ([]Entry, []string, error) {
	s := &parallelScan{ctx: ctx, t: t, sem: make(chan struct{}, workers-1)}
	if keep := t.o.Keep; keep != nil {
		var mu sync.Mutex
		o := *t.o
		o.Keep = func(p, digest string, data []byte) error {
			mu.Lock()
			defer mu.Unlock()
			return keep(p, digest, data)
		}
		t = &taker{o: &o, root: t.root, prev: t.prev, racyAfter: t.racyAfter}
		s.t = t
	}
	root := &listing{}
	s.dir(".", nil, root)
	s.wg.Wait()
	if s.err != nil {
		return nil, nil, s.err
	}
	entries := make([]Entry, 0, s.n.Load())
	var unreadable []string
	var flatten func(p string, l *listing)
	flatten = func(p string, l *listing) {
		if l.unreadable {
			unreadable = append(unreadable, p)
		}
		k := 0
		for _, e := range l.entries {
			entries = append(entries, e)
			if e.IsDir() {
				flatten(e.Path, l.subs[k])
				k++
			}
		}
	}
	flatten(".", root)
	return entries, unreadable, nil
}

// fail records err as the scan's error unless one came first.
func (s *parallelScan) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	s.stop.Store(true)
}

// dir lists directory p, whose parent's rules are parent (nil for the
// root), into l, and its subdirectories each on a goroutine of its own
// while there is a token for one, on this one when not.
func (s *parallelScan) dir(p string, parent *walk.Filter, l *listing) {
	if s.stop.Load() {
		return
	}
	if err := s.ctx.Err(); err != nil {
		s.fail(err)
		return
	}
	if p == "." && s.t.o.Dir != nil {
		s.t.o.Dir(p)
	}
	es, err := listDir(s.t.root, p)
	if err != nil {
		if p == "." {
			s.fail(err)
			return
		}
		// As fs.WalkDir reports it: listed in its parent, unreadable now.
		l.unreadable = true
		return
	}
	var f *walk.Filter
	if parent == nil {
		f = walk.NewFilter(s.t.root.FS(), p, s.t.o.Walk)
	} else {
		f = parent.EnterListed(p, func(name string) bool {
			_, ok := slices.BinarySearchFunc(es, p+"/"+name, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
			return ok
		})
	}
	l.entries = es[:0]
	hint := 0
	var subdirs []string
	for _, e := range es {
		if f.Skip(e.Path, e.IsDir()) {
			continue
		}
		if err := s.t.complete(&e, &hint); err != nil {
			s.fail(err)
			return
		}
		l.entries = append(l.entries, e)
		if e.IsDir() {
			if s.t.o.Dir != nil {
				s.t.o.Dir(e.Path)
			}
			subdirs = append(subdirs, e.Path)
		}
	}
	s.n.Add(int64(len(l.entries)))
	l.subs = make([]*listing, len(subdirs))
	for i, sp := range subdirs {
		sub := &listing{}
		l.subs[i] = sub
		select {
		case s.sem <- struct{}{}:
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { <-s.sem }()
				s.dir(sp, f, sub)
			}()
		default:
			s.dir(sp, f, sub)
		}
	}
}
