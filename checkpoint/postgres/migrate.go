package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change, numbered from 1 by its file name
// (0001_init.sql is version 1).
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. It panics if their
// names do not number them 1, 2, 3 …, which is a build error.
func migrations() []migration {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	out := make([]migration, 0, len(names))
	for i, name := range names { // fs.Glob sorts
		base := path.Base(name)
		n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || n != i+1 {
			panic(fmt.Sprintf("postgres: migration %s is not number %d", base, i+1))
		}
		data, err := migrationFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: n, name: base, sql: string(data)})
	}
	return out
}

// schemaVersion is the schema version this build creates and reads, found
// on first use rather than at every process start.
var schemaVersion = sync.OnceValue(func() int { return len(migrations()) })

// backfills are the steps, written in Go, that follow a migration's SQL in
// its transaction, by version.
var backfills = map[int]func(context.Context, pgx.Tx) error{
	2: backfillEntries,
	4: backfillChecksums,
}

// backfillChecksums fills in the crc column (version 4) of every stored
// event, a batch at a time in (session, seq) order, then makes it NOT NULL.
func backfillChecksums(ctx context.Context, tx pgx.Tx) error {
	afterID, afterSeq := "", int64(0)
	for {
		rows, err := tx.Query(ctx, `SELECT session, seq, type, time, data FROM events
			WHERE (session, seq) > ($1, $2) ORDER BY session, seq LIMIT $3`, afterID, afterSeq, backfillBatch)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		var (
			ids  []string
			seqs []int64
			sums []int32
		)
		for rows.Next() {
			var (
				id  string
				typ string
				e   session.Event
			)
			if err := rows.Scan(&id, &e.Seq, &typ, &e.Time, &e.Data); err != nil {
				rows.Close()
				return fmt.Errorf("read events: %w", err)
			}
			e.Type = session.Type(typ)
			ids, seqs, sums = append(ids, id), append(seqs, e.Seq), append(sums, int32(checkpoint.Checksum(e)))
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		if len(ids) == 0 {
			_, err := tx.Exec(ctx, `ALTER TABLE events ALTER COLUMN crc SET NOT NULL`)
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE events e SET crc = v.crc
			FROM unnest($1::text[], $2::bigint[], $3::integer[]) AS v(session, seq, crc)
			WHERE e.session = v.session AND e.seq = v.seq`, ids, seqs, sums); err != nil {
			return fmt.Errorf("write checksums: %w", err)
		}
		afterID, afterSeq = ids[len(ids)-1], seqs[len(seqs)-1]
	}
}

// backfillBatch is how many rows backfillEntries rewrites per statement.
const backfillBatch = 1000

// backfillEntries fills in the entry column (version 2) of every session
// from its JSON summary, a batch of rows at a time in id order.
func backfillEntries(ctx context.Context, tx pgx.Tx) error {
	after := ""
	for {
		rows, err := tx.Query(ctx, `SELECT id, summary FROM sessions WHERE id > $1 ORDER BY id LIMIT $2`, after, backfillBatch)
		if err != nil {
			return fmt.Errorf("read summaries: %w", err)
		}
		var (
			ids     []string
			entries [][]byte
		)
		for rows.Next() {
			var (
				id  string
				raw []byte
				sum session.Summary
			)
			if err := rows.Scan(&id, &raw); err != nil {
				rows.Close()
				return fmt.Errorf("read summaries: %w", err)
			}
			if err := json.Unmarshal(raw, &sum); err != nil {
				rows.Close()
				return fmt.Errorf("decode the summary of session %s: %w", id, err)
			}
			ids, entries = append(ids, id), append(entries, entry.Encode(&sum))
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read summaries: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions s SET entry = v.entry
			FROM unnest($1::text[], $2::bytea[]) AS v(id, entry) WHERE s.id = v.id`, ids, entries); err != nil {
			return fmt.Errorf("write entries: %w", err)
		}
		after = ids[len(ids)-1]
	}
}

// lockKey is the advisory lock migrations hold, one per schema so stores in
// different schemas of one database do not wait for each other.
const lockSQL = `SELECT pg_advisory_xact_lock(hashtext('lite-agent checkpoint schema ' || current_schema()))`

// schemaName returns the schema the tables live in, or an error saying how to
// choose one when search_path names none that exists.
func schemaName(ctx context.Context, conn *pgx.Conn) (string, error) {
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", err
	}
	if schema == nil {
		var sp string
		_ = conn.QueryRow(ctx, `SHOW search_path`).Scan(&sp)
		return "", fmt.Errorf("%w: no schema of the search_path (%s) exists in this database: create one (CREATE SCHEMA name) or set search_path in the URL to an existing schema", checkpoint.ErrInvalid, sp)
	}
	return *schema, nil
}

// installedVersion returns the schema version recorded in schema_version, 0
// if the table does not exist.
func installedVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// errNewerSchema is the error for a database written by a newer build.
func errNewerSchema(schema string, v int) error {
	return fmt.Errorf("the lite-agent tables in schema %q are at version %d, newer than this build knows (%d): upgrade lite-agent", schema, v, schemaVersion())
}

// migrate brings the schema up to schemaVersion. Several processes may call
// it at once: the advisory lock lets one migrate while the others wait, and
// they then find nothing left to do.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	schema, err := schemaName(ctx, conn)
	if err != nil {
		return err
	}
	v, err := installedVersion(ctx, conn)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == schemaVersion() {
		return nil
	}
	if v > schemaVersion() {
		return errNewerSchema(schema, v)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL); err != nil {
			return fmt.Errorf("lock schema for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version integer PRIMARY KEY,
			name    text NOT NULL,
			applied timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > schemaVersion() {
			return errNewerSchema(schema, v)
		}
		for _, m := range migrations()[v:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate schema %q to version %d (%s): %w", schema, m.version, m.name, err)
			}
			if fill := backfills[m.version]; fill != nil {
				if err := fill(ctx, tx); err != nil {
					return fmt.Errorf("migrate schema %q to version %d (%s): %w", schema, m.version, m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record schema version %d: %w", m.version, err)
			}
		}
		return nil
	})
}

// checkSchema is what a read-only store does instead of migrating: the tables
// must exist at the version this build reads.
func checkSchema(ctx context.Context, conn *pgx.Conn) error {
	schema, err := schemaName(ctx, conn)
	if err != nil {
		return err
	}
	v, err := installedVersion(ctx, conn)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return fmt.Errorf("read schema version: %w", err)
		}
		return err
	}
	switch {
	case v == 0:
		return fmt.Errorf("%w: schema %q holds no lite-agent sessions yet (no schema_version table); open it once read-write to create the tables", checkpoint.ErrNotFound, schema)
	case v > schemaVersion():
		return errNewerSchema(schema, v)
	case v < schemaVersion():
		return fmt.Errorf("the lite-agent tables in schema %q are at version %d and this build needs %d; a read-only store does not migrate: open it once read-write to upgrade them", schema, v, schemaVersion())
	}
	return nil
}
