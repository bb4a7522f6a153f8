package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// Put writes o's row: its payload (a JSON object of payload column → value)
// into the payload columns and its forward refs into their columns (a
// forward ref absent from o sets its columns to NULL); reverse refs are
// derived, and ignored. The row is inserted when it does not exist and
// updated otherwise. The version is the change log's: o.Version is ignored.
// With expected set, the write happens only if the object is at that
// version (0 = must not exist), checked under a lock on the object's
// version, else the error wraps store.ErrVersionMismatch. A type the
// mapping does not mark writable answers store.ErrReadOnly.
func (s *Store) Put(o *graph.Object, expected *uint64) (version, revision uint64, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, fmt.Errorf("putting object: %w", err)
	}
	tb, key, err := s.writable(o.ID)
	if err != nil {
		return 0, 0, err
	}
	cols, vals, err := tb.rowValues(o, s.tables)
	if err != nil {
		return 0, 0, fmt.Errorf("putting %q: %w: %w", o.ID, store.ErrInvalid, err)
	}
	err = s.write(o.ID, func(ctx context.Context, tx pgx.Tx, current uint64) error {
		if expected != nil && *expected != current {
			return store.Mismatch(current, *expected)
		}
		keyArgs := make([]any, len(key))
		for i, v := range key {
			keyArgs[i] = v
		}
		args := make([]any, len(vals))
		for i, v := range vals {
			args[i] = v
		}
		sql := tb.updateSQL(cols)
		if current == 0 {
			sql, args = tb.insertSQL(cols), append(keyArgs, args...)
		} else {
			args = append(args, keyArgs...)
		}
		_, err := tx.Exec(ctx, sql, args...)
		return err
	}, func(v, r uint64) { version, revision = v, r })
	if err != nil {
		return 0, 0, fmt.Errorf("putting %q: %w", o.ID, err)
	}
	return version, revision, nil
}

// Delete deletes the object's row; the error wraps store.ErrNotFound when
// there is none, store.ErrVersionMismatch when expected is set and the
// object is at another version. The change records the next version.
func (s *Store) Delete(id string, expected *uint64) (revision uint64, err error) {
	if err := graph.ValidateID(id); err != nil {
		return 0, fmt.Errorf("deleting object: %w", err)
	}
	tb, key, err := s.writable(id)
	if err != nil {
		return 0, err
	}
	err = s.write(id, func(ctx context.Context, tx pgx.Tx, current uint64) error {
		if current == 0 {
			return store.ErrNotFound
		}
		if expected != nil && *expected != current {
			return store.Mismatch(current, *expected)
		}
		args := make([]any, len(key))
		for i, v := range key {
			args[i] = v
		}
		_, err := tx.Exec(ctx, "DELETE FROM "+tb.qname+" t WHERE "+tb.keyEquals(1), args...)
		return err
	}, func(_, r uint64) { revision = r })
	if err != nil {
		return 0, fmt.Errorf("deleting %q: %w", id, err)
	}
	return revision, nil
}

// writable routes id to a writable type.
func (s *Store) writable(id string) (*table, []string, error) {
	if s.isClosed() {
		return nil, nil, store.ErrClosed
	}
	tb, key := s.route(id)
	if tb == nil {
		return nil, nil, fmt.Errorf("%w: id %q matches no type's id format", store.ErrInvalid, id)
	}
	if !tb.typ.Writable {
		return nil, nil, fmt.Errorf("%w: type %q is not writable (set writable: true in the mapping)", store.ErrReadOnly, tb.typ.Name)
	}
	return tb, key, nil
}

// write runs fn in a transaction that holds the object's row (if any) and
// its version locked; current is the object's version, 0 when it does not
// exist. done receives the version and revision the write's change got.
func (s *Store) write(id string, fn func(ctx context.Context, tx pgx.Tx, current uint64) error, done func(version, revision uint64)) error {
	tb, key := s.route(id)
	ctx, cancel := s.ctx()
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	args := make([]any, len(key)+1)
	for i, v := range key {
		args[i] = v
	}
	args[len(key)] = id
	var exists bool
	var current int64
	err = tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+tb.qname+" t WHERE "+tb.keyEquals(1)+" FOR UPDATE), "+
		"coalesce((SELECT version FROM "+s.log+".versions WHERE id = $"+strconv.Itoa(len(key)+1)+" FOR UPDATE), 1)", args...).Scan(&exists, &current)
	if err != nil {
		return classify(err)
	}
	if !exists {
		current = 0
	}
	if err := fn(ctx, tx, uint64(current)); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return fmt.Errorf("%w: created concurrently", store.ErrVersionMismatch)
		}
		return classify(err)
	}
	var version, revision int64
	err = tx.QueryRow(ctx, "SELECT (SELECT version FROM "+s.log+".versions WHERE id = $1), currval(pg_get_serial_sequence($2, 'revision'))",
		id, s.cfg.Mapping.ChangeLog+".changes").Scan(&version, &revision)
	if err != nil {
		return fmt.Errorf("reading the change's revision (is the trigger installed?): %w", classify(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return classify(err)
	}
	done(uint64(version), uint64(revision))
	s.rev.Advance(uint64(revision))
	return nil
}

// keyEquals matches the key columns of alias t against $n, $n+1, ….
func (tb *table) keyEquals(n int) string {
	conds := make([]string, len(tb.keyCols))
	for i, c := range tb.keyCols {
		conds[i] = col("t", c) + " = $" + strconv.Itoa(n+i) + "::text::" + tb.keyTypes[i].typ
	}
	return strings.Join(conds, " AND ")
}

// rowValues turns o's payload and forward refs into column values, as text
// (nil = NULL) for the database to cast.
func (tb *table) rowValues(o *graph.Object, tables map[string]*table) (cols []string, vals []*string, err error) {
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(o.Payload)) > 0 {
		if err := json.Unmarshal(o.Payload, &fields); err != nil {
			return nil, nil, fmt.Errorf("payload: want a JSON object: %w", err)
		}
	}
	for name := range fields {
		if !contains(tb.payload, name) {
			return nil, nil, fmt.Errorf("payload: %q is not a payload column of type %q", name, tb.typ.Name)
		}
	}
	var refCols []string
	for _, r := range tb.typ.Refs {
		refCols = append(refCols, r.Columns...)
	}
	for _, c := range tb.payload {
		if contains(refCols, c) {
			continue // set from the ref below
		}
		v, err := jsonText(fields[c])
		if err != nil {
			return nil, nil, fmt.Errorf("payload %q: %w", c, err)
		}
		cols, vals = append(cols, c), append(vals, v)
	}
	refs := map[string]string{}
	for _, r := range o.Refs {
		refs[r.Field] = r.ID
	}
	for _, r := range tb.typ.Refs {
		id, ok := refs[r.Field]
		delete(refs, r.Field)
		var key []string
		if ok {
			if key, ok = tables[r.Type].id.parse(id); !ok {
				return nil, nil, fmt.Errorf("ref %q: %q is not a %s id", r.Field, id, r.Type)
			}
		}
		for i, c := range r.Columns {
			var v *string
			if key != nil {
				v = &key[i]
			}
			cols, vals = append(cols, c), append(vals, v)
		}
	}
	for _, r := range tb.typ.Reverse {
		delete(refs, r.Field)
	}
	for f := range refs {
		return nil, nil, fmt.Errorf("ref field %q is not in type %q's mapping", f, tb.typ.Name)
	}
	return cols, vals, nil
}

// jsonText is a JSON value as the text the database casts from: strings
// unquoted, null as NULL, everything else as its JSON text.
func jsonText(raw json.RawMessage) (*string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return &s, nil
	}
	s := string(raw)
	return &s, nil
}

func (tb *table) insertSQL(cols []string) string {
	all := append(append([]string{}, tb.keyCols...), cols...)
	names := make([]string, len(all))
	params := make([]string, len(all))
	for i, c := range all {
		names[i] = pgx.Identifier{c}.Sanitize()
		params[i] = "$" + strconv.Itoa(i+1) + "::text::" + tb.cols[c].typ
	}
	return "INSERT INTO " + tb.qname + " (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(params, ", ") + ")"
}

func (tb *table) updateSQL(cols []string) string {
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = pgx.Identifier{c}.Sanitize() + " = $" + strconv.Itoa(i+1) + "::text::" + tb.cols[c].typ
	}
	if len(sets) == 0 { // nothing but the key: still a write, so still a change
		sets = []string{pgx.Identifier{tb.keyCols[0]}.Sanitize() + " = t." + pgx.Identifier{tb.keyCols[0]}.Sanitize()}
	}
	return "UPDATE " + tb.qname + " t SET " + strings.Join(sets, ", ") + " WHERE " + tb.keyEquals(len(cols)+1)
}
