package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/groupcommit"
)

var _ checkpoint.Checkpointer = (*Store)(nil)

// DefaultMaxEventBytes is the largest event data a Store accepts unless
// Options.MaxEventBytes says otherwise. PostgreSQL itself stores up to 1 GB
// in a bytea, but every event of a log is read back whenever the session is
// resumed, so content this large belongs outside the log.
const DefaultMaxEventBytes = 64 << 20

// MaxEventBytesLimit is the largest Options.MaxEventBytes Open accepts,
// well below the 1 GB PostgreSQL stores in one value.
const MaxEventBytesLimit = 512 << 20

// DefaultConnectTimeout bounds each connection attempt when the URL does not
// set connect_timeout, so an unreachable host fails instead of hanging.
const DefaultConnectTimeout = 10 * time.Second

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// ReadOnly opens the store for inspection: every connection defaults to
	// read-only transactions (default_transaction_read_only), the schema is
	// checked but never created or migrated, and Append, Truncate and Delete
	// return checkpoint.ErrReadOnly.
	ReadOnly bool
	// MaxConns caps the connection pool; 0 means pgxpool's default
	// (the larger of 4 and the number of CPUs). The URL's pool_max_conns
	// wins over it.
	MaxConns int32
	// MaxEventBytes caps one event's data; 0 means DefaultMaxEventBytes,
	// and at most MaxEventBytesLimit.
	MaxEventBytes int
	// ConnectTimeout bounds each connection attempt; 0 means the URL's
	// connect_timeout, or DefaultConnectTimeout if the URL has none.
	ConnectTimeout time.Duration
}

// Store is a checkpoint.Checkpointer that keeps session logs in a PostgreSQL
// database. It is safe for concurrent use, and any number of Stores in any
// number of processes and hosts may share one database. Create it with Open.
type Store struct {
	pool     *pgxpool.Pool
	where    string   // host:port/database, for messages
	secrets  []string // the URL's password in its spellings, scrubbed from errors
	readOnly bool
	maxEvent int
	group    *groupcommit.Group[appendReq]

	appending  atomic.Int64 // Appends between Submit and its return
	commitTime atomic.Int64 // moving average of a group commit, in ns

	mu     sync.RWMutex // guards closed against calls.Add
	closed bool
	calls  sync.WaitGroup

	cacheMu sync.Mutex
	cache   map[string]state // last state this Store wrote or read, by session

	blobTable    atomic.Bool       // the blob table is known to exist (blob.go)
	foldTable    atomic.Bool       // the folds table is known to exist (fold.go)
	leaseMu      sync.Mutex        // guards the three below (lease.go)
	leases       map[string]*lease // the session leases this Store holds, by session
	idleConns    []*pgx.Conn       // connections kept for the next lease
	closedLeases bool              // Close let go of them all

	listen listener // the LISTEN connection of Watch (notify.go)
}

// Open connects to the PostgreSQL database named by url (postgres:// or
// postgresql://, with the parameters libpq and pgx accept, e.g.
// postgres://user:password@host:5432/db?sslmode=disable) and returns a Store.
// It creates or upgrades the tables (see the package documentation) unless
// opts.ReadOnly is set, in which case it only checks that they exist.
//
// The tables live in the first schema of the connection's search_path
// (normally public); add ?search_path=NAME to the URL to keep them in a
// schema of their own. ctx bounds connecting and migrating only.
//
// Errors say what to do: a wrong password, a host that does not answer, a
// database that does not exist, a schema newer than this build. They never
// contain the URL's password.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	secrets := urlSecrets(url)
	scrub := func(err error) error { return scrubError(err, secrets) }
	lower := strings.ToLower(url)
	if !strings.HasPrefix(lower, "postgres://") && !strings.HasPrefix(lower, "postgresql://") {
		return nil, fmt.Errorf("open postgres: %w: the location must be a postgres:// or postgresql:// URL such as postgres://user:password@localhost:5432/dbname", checkpoint.ErrInvalid)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, scrub(fmt.Errorf("open postgres: %w: cannot parse the URL (%v); see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS", checkpoint.ErrInvalid, err))
	}
	cc := cfg.ConnConfig
	where := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	if strings.HasPrefix(cc.Host, "/") {
		where = fmt.Sprintf("%s/.s.PGSQL.%d/%s", cc.Host, cc.Port, cc.Database)
	}
	if opts.ConnectTimeout > 0 {
		cc.ConnectTimeout = opts.ConnectTimeout
	} else if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.MaxConns > 0 && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = opts.MaxConns
	}
	params := cc.RuntimeParams
	if params["application_name"] == "" {
		params["application_name"] = "lite-agent"
	}
	// An acknowledged append must survive a crash of the server's machine,
	// whatever the server's own default is. A URL that sets it explicitly
	// is taken at its word.
	if _, ok := params["synchronous_commit"]; !ok {
		params["synchronous_commit"] = "on"
	}
	if opts.ReadOnly {
		params["default_transaction_read_only"] = "on"
	}
	maxEvent := opts.MaxEventBytes
	switch {
	case maxEvent == 0:
		maxEvent = DefaultMaxEventBytes
	case maxEvent < 0 || maxEvent > MaxEventBytesLimit:
		return nil, fmt.Errorf("open postgres: %w: Options.MaxEventBytes %d is out of range; use 0 for the default (%d) or a limit up to %d", checkpoint.ErrInvalid, maxEvent, DefaultMaxEventBytes, MaxEventBytesLimit)
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("open postgres at %s: %w", where, err))
	}
	s := &Store{
		pool:     pool,
		where:    where,
		secrets:  secrets,
		readOnly: opts.ReadOnly,
		maxEvent: maxEvent,
		cache:    make(map[string]state),
	}
	s.group = groupcommit.New(s.commit)
	s.group.Gather(s.gatherWait)
	if err := s.setUp(ctx); err != nil {
		pool.Close()
		return nil, s.fail("open postgres", err)
	}
	return s, nil
}

// setUp checks the connection and brings the schema up to date (or, read-only,
// checks it).
func (s *Store) setUp(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if s.readOnly {
		return checkSchema(ctx, conn.Conn())
	}
	if err := migrate(ctx, conn.Conn()); err != nil {
		return err
	}
	if err := ensureMailbox(ctx, conn.Conn()); err != nil {
		return err
	}
	return ensureIndex(ctx, conn.Conn())
}

// enter registers a call in progress; it fails once the store is closed.
func (s *Store) enter() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return checkpoint.ErrClosed
	}
	s.calls.Add(1)
	return nil
}

func (s *Store) leave() { s.calls.Done() }

// Close waits for the calls in progress to return and closes the connection
// pool. Later calls return checkpoint.ErrClosed; closing again returns nil.
// A Read being iterated is not waited for: its next page fails with
// checkpoint.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.calls.Wait()
	s.stopListening()
	s.closeLeases()
	s.pool.Close()
	return nil
}

// fail wraps err with op and a hint, and removes the URL's password from it.
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var ce *checkpoint.ConflictError
	if errors.As(err, &ce) {
		return err
	}
	var after string
	var amb *ambiguousError
	if errors.As(err, &amb) {
		after = "; it may or may not have been saved: reload the session to find out"
	}
	return scrubError(fmt.Errorf("%s: %w%s", op, explain(err, s.where), after), s.secrets)
}
