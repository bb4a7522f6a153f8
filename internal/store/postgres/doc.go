// Package postgres serves an existing PostgreSQL schema as lookahead objects
// through a mapping, with a trigger-fed change log for Watch.
//
// It uses github.com/jackc/pgx/v5: pure Go (no cgo, static binaries), a
// connection pool (pgxpool), statements prepared and cached per connection
// on first use (every query here has a fixed text per type, so each is
// parsed and planned once per connection), native COPY (the shop generator
// loads with it) and LISTEN/NOTIFY on a dedicated connection, which is how
// watchers wake without polling. database/sql drivers hide the last two.
//
// Reads: Get routes each id to its type by the id format's literal prefix
// and sends one query per type, all in one pipelined batch; each query
// selects its rows by key (= ANY of a typed array), their payload as a JSON
// object, their forward refs and, through correlated subqueries, their
// reverse refs. The origin server's Expand calls Get once per level.
//
// Versions and revisions come from the change log that Install creates in
// its own schema: triggers on the mapped tables append one change per
// changed object (a row's own, and its parents' whose reverse refs it
// joins or leaves) under a bigserial revision, bump the object's counter in
// a versions table, and NOTIFY. See docs/postgres.md.
package postgres
