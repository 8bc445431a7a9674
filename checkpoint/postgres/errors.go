package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// hintError puts a sentence saying what to do in front of the error it wraps.
type hintError struct {
	hint string
	err  error
}

func (e *hintError) Error() string { return e.hint + " (" + e.err.Error() + ")" }
func (e *hintError) Unwrap() error { return e.err }

// ambiguousError is the error of an append that was sent to the server
// but whose outcome could not be learnt: the connection broke before the
// reply and the server could not be asked again in time.
type ambiguousError struct{ err error }

func (e *ambiguousError) Error() string { return e.err.Error() }
func (e *ambiguousError) Unwrap() error { return e.err }

// readOnlyServerError is a write refused because the server (a standby) or
// the database is read-only. It is checkpoint.ErrReadOnly as well.
type readOnlyServerError struct{ hintError }

func (e *readOnlyServerError) Is(target error) bool { return target == checkpoint.ErrReadOnly }

// explain adds a hint to the errors a user can act on. where is host:port/db.
func explain(err error, where string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		return err
	}
	var h *hintError
	if errors.As(err, &h) || errors.Is(err, checkpoint.ErrClosed) || errors.Is(err, checkpoint.ErrNotFound) ||
		errors.Is(err, checkpoint.ErrInvalid) || errors.Is(err, checkpoint.ErrReadOnly) {
		return err
	}
	host, db := where, ""
	if i := strings.LastIndexByte(where, '/'); i >= 0 {
		host, db = where[:i], where[i+1:]
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01":
			return &hintError{fmt.Sprintf("the PostgreSQL server at %s rejected the password: check the user name and password in the URL", host), err}
		case "28000":
			return &hintError{fmt.Sprintf("the PostgreSQL server at %s refused this login: allow this client, user and database in the server's pg_hba.conf, or use another user", host), err}
		case "3D000":
			return &hintError{fmt.Sprintf("database %q does not exist on the PostgreSQL server at %s: create it (createdb %s, or CREATE DATABASE in psql) or put an existing database in the URL", db, host, db), err}
		case "57P03":
			return &hintError{fmt.Sprintf("the PostgreSQL server at %s is starting up or shutting down: try again in a moment", host), err}
		case "53300":
			return &hintError{fmt.Sprintf("the PostgreSQL server at %s has no connection slots left: raise its max_connections or lower Options.MaxConns (or pool_max_conns in the URL)", host), err}
		case "42501":
			return &hintError{fmt.Sprintf("the database user lacks a privilege on %s: grant it CREATE and USAGE on the schema (and ownership of the tables), or use the user that created them", where), err}
		case "25006":
			return &readOnlyServerError{hintError{fmt.Sprintf("the PostgreSQL server at %s only accepts reads (a standby, or default_transaction_read_only): point the URL at the primary", host), err}}
		case "3F000":
			return &hintError{fmt.Sprintf("the schema named by search_path does not exist in %s: create it (CREATE SCHEMA name) or fix search_path in the URL", where), err}
		}
		if strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") {
			return &hintError{fmt.Sprintf("lost the connection to the PostgreSQL server at %s: check that it is running; the operation may or may not have taken effect", host), err}
		}
		return err
	}
	var ce *pgconn.ConnectError
	connecting := errors.As(err, &ce)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &hintError{fmt.Sprintf("no PostgreSQL server answers at %s: start it, or fix the host and port in the URL", host), err}
	case pgconn.Timeout(err) && connecting:
		return &hintError{fmt.Sprintf("timed out connecting to the PostgreSQL server at %s: check that the host is reachable, the port is right and no firewall drops the connection", host), err}
	case isDNSError(err):
		return &hintError{fmt.Sprintf("cannot resolve the host of %s: fix the host name in the URL", host), err}
	case connecting:
		return &hintError{fmt.Sprintf("cannot connect to the PostgreSQL server at %s: check the URL and that the server is running", host), err}
	case isConnectionLost(err):
		return &hintError{fmt.Sprintf("lost the connection to the PostgreSQL server at %s: check that it is running", host), err}
	}
	return err
}

func isDNSError(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

// isConnectionLost reports whether err is a failure of the connection rather
// than of the statement: the server went away, restarted or is not there.
func isConnectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		strings.Contains(err.Error(), "conn closed")
}

// isTransient reports whether a statement that failed with err is worth
// running again as it is: the connection broke, or the server chose this
// transaction as a deadlock or serialization victim.
func isTransient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
		return true
	}
	return isConnectionLost(err)
}

// urlSecrets returns the password of a connection URL in the spellings an
// error message might quote it in: as written and decoded.
func urlSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 && !strings.Contains(strings.Join(out, "\x00"), s) {
			out = append(out, s)
		}
	}
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
			add(url.PathEscape(pw))
			add(url.QueryEscape(pw))
		}
		for k, vs := range u.Query() {
			if strings.EqualFold(k, "password") {
				for _, v := range vs {
					add(v)
					add(url.QueryEscape(v))
				}
			}
		}
	}
	// A URL that does not parse may still hold a password.
	if m := rawPassword().FindStringSubmatch(raw); m != nil {
		add(m[1])
		if d, err := url.PathUnescape(m[1]); err == nil {
			add(d)
		}
	}
	if m := queryPassword().FindStringSubmatch(raw); m != nil {
		add(m[1])
	}
	return out
}

// The password patterns are compiled on first use, not at every process
// start (most processes never open PostgreSQL).
var (
	rawPassword   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z]+://[^:/@?#]*:(.*)@[^@]*$`) })
	queryPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)[?&]password=([^&#]*)`) })
)

// scrubbedError hides secrets from an error's message and from those of the
// errors it wraps when they are printed through it.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError replaces every secret in err's message with "xxxxx".
func scrubError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		clean = strings.ReplaceAll(clean, s, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}
