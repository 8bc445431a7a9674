package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The store talks to the driver directly instead of through database/sql:
// it needs its own transactions (BEGIN IMMEDIATE, retried while another
// process holds the lock), statements prepared once per connection, and
// rows handed over without a second copy of every blob.

// conn is one SQLite connection with its prepared statements. It is used
// by one goroutine at a time: whoever took it from the pool.
type conn struct {
	dc    driver.Conn
	stmts map[string]driver.Stmt
	// broken is set when the connection may be left in a transaction; the
	// pool closes it instead of reusing it.
	broken bool
}

// stmt returns the prepared statement for query, preparing it on first use.
func (c *conn) stmt(query string) (driver.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// named turns positional arguments into the driver's form.
func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

// exec runs one statement and returns the number of rows it changed. ctx
// interrupts it (and ends a wait for a lock); context.Background() never
// does, which is what statements inside a batch commit use.
func (c *conn) exec(ctx context.Context, query string, args ...driver.Value) (int64, error) {
	st, err := c.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(ctx, named(args))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs one statement that returns rows. The caller closes the rows
// before it uses the connection again.
func (c *conn) query(ctx context.Context, query string, args ...driver.Value) (driver.Rows, error) {
	st, err := c.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtQueryContext).QueryContext(ctx, named(args))
}

// each runs a query and calls f once for each of its rows, held in dest,
// until the rows end or f fails; the rows are closed before it returns.
func (c *conn) each(ctx context.Context, dest []driver.Value, f func() error, query string, args ...driver.Value) error {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := f(); err != nil {
			return err
		}
	}
}

// row runs a query expected to return at most one row and stores its
// columns in dest. found is false when there was no row.
func (c *conn) row(ctx context.Context, dest []driver.Value, query string, args ...driver.Value) (found bool, err error) {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return false, err
	}
	err = rows.Next(dest)
	cerr := rows.Close()
	switch {
	case errors.Is(err, io.EOF):
		return false, cerr
	case err != nil:
		return false, err
	}
	return true, cerr
}

// script runs SQL text that may hold several statements, unprepared.
func (c *conn) script(ctx context.Context, text string) error {
	_, err := c.dc.(driver.ExecerContext).ExecContext(ctx, text, nil)
	return err
}

// close finalizes the statements and closes the connection.
func (c *conn) close() error {
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	clear(c.stmts)
	errs = append(errs, c.dc.Close())
	return errors.Join(errs...)
}

// pool hands out at most cap(slots) connections at once and, if keepIdle,
// keeps the idle ones open.
type pool struct {
	open     func() (driver.Conn, error)
	slots    chan struct{} // one token per connection in use
	keepIdle bool

	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// newPool returns a pool of at most size connections made by open. Without
// keepIdle every connection is closed when it is put back.
func newPool(size int, keepIdle bool, open func() (driver.Conn, error)) *pool {
	return &pool{open: open, slots: make(chan struct{}, size), keepIdle: keepIdle}
}

// errPoolClosed is returned by get after close; the store turns it into
// checkpoint.ErrClosed.
var errPoolClosed = errors.New("connection pool closed")

// get returns an idle connection or opens one, waiting while all are in use.
func (p *pool) get(ctx context.Context) (*conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, errPoolClosed
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	dc, err := p.open()
	if err != nil {
		<-p.slots
		return nil, err
	}
	return &conn{dc: dc, stmts: make(map[string]driver.Stmt)}, nil
}

// put returns c to the pool; a broken connection (or any after close) is
// closed instead.
func (p *pool) put(c *conn, broken bool) {
	p.mu.Lock()
	if broken || c.broken || p.closed || !p.keepIdle {
		p.mu.Unlock()
		c.close()
	} else {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
	<-p.slots
}

// close closes the idle connections; connections in use are closed when
// they are put back. Later gets fail.
func (p *pool) close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	for _, c := range idle {
		if err := c.close(); err != nil {
			errs = append(errs, fmt.Errorf("close connection: %w", err))
		}
	}
	return errors.Join(errs...)
}
