// Package enginecmp compares the two cgo-free SQLite drivers, modernc.org/sqlite
// (what checkpoint/sqlite uses) and github.com/ncruces/go-sqlite3 (SQLite
// compiled to WebAssembly, run by wazero), in this project's schema and
// access pattern, in one benchmark run: the one-shot process's open of an
// existing database, the durable append of one 1 KiB event (BEGIN
// IMMEDIATE, the summary read, the event row, its search-index row, the
// summary upsert, COMMIT with synchronous=FULL in WAL mode) against a bare
// 1 KiB write+fsync in the same directory, and the read of a 10,000-event
// log.
//
// It is its own module so that the project itself does not depend on the
// driver it does not use: `go test ./...` at the root does not run it.
// Re-run it with
//
//	cd internal/enginecmp && go test -run '^$' -bench . -benchtime 200x
//
// The statements are those of checkpoint/sqlite (schema/*.sql, write.go,
// search.go), repeated here because that package is bound to modernc's
// driver.Conn.
package enginecmp
