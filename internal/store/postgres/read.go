package postgres

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// route finds the type of id and its key values; nil when no type's format
// matches or a value cannot be a value of its key column (such an id is
// simply missing).
func (s *Store) route(id string) (*table, []string) {
	for _, tb := range s.order {
		vals, ok := tb.id.parse(id)
		if !ok {
			continue
		}
		for i, v := range vals {
			if !validKey(tb.keyTypes[i].typname, v) {
				return nil, nil
			}
		}
		return tb, vals
	}
	return nil, nil
}

// validKey reports whether v can be cast to a key column of type typname
// without an error; types it does not know are left to the database.
func validKey(typname, v string) bool {
	bits := map[string]int{"int2": 16, "int4": 32, "int8": 64}
	if b, ok := bits[typname]; ok {
		n, err := strconv.ParseInt(v, 10, b)
		return err == nil && strconv.FormatInt(n, 10) == v // the canonical text, as ids are formatted
	}
	if typname == "uuid" {
		return isUUID(v)
	}
	return true
}

func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i, r := range v {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f':
		default:
			return false
		}
	}
	return true
}

// Get reads the objects it has among ids: one query per type, all sent to
// the database in one batch (one network round trip). Found objects come in
// request order and missing ids in request order; an id asked for more than
// once is answered once.
func (s *Store) Get(ids []string) (found []*graph.Object, missing []string, err error) {
	if s.isClosed() {
		return nil, nil, store.ErrClosed
	}
	uniq, groups := s.groupByTable(ids)
	objs := make(map[string]*graph.Object, len(uniq))
	if len(groups) > 0 {
		if err := s.readGroups(groups, objs); err != nil {
			return nil, nil, err
		}
	}
	for _, id := range uniq {
		if o, ok := objs[id]; ok {
			found = append(found, o)
		} else {
			missing = append(missing, id)
		}
	}
	return found, missing, nil
}

// getGroup is the ids of one table that one Get asks for, by key column.
type getGroup struct {
	tb     *table
	params [][]string // per key column
}

// groupByTable drops duplicate ids and groups the rest by the table that
// holds them; ids of no mapped table are only in uniq.
func (s *Store) groupByTable(ids []string) (uniq []string, groups []*getGroup) {
	byTable := map[*table]*getGroup{}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		uniq = append(uniq, id)
		tb, vals := s.route(id)
		if tb == nil {
			continue
		}
		g := byTable[tb]
		if g == nil {
			g = &getGroup{tb: tb, params: make([][]string, len(vals))}
			byTable[tb] = g
			groups = append(groups, g)
		}
		for i, v := range vals {
			g.params[i] = append(g.params[i], v)
		}
	}
	return uniq, groups
}

// readGroups runs one prepared query per group, pipelined in one batch, and
// puts what they find into objs.
func (s *Store) readGroups(groups []*getGroup, objs map[string]*graph.Object) error {
	ctx, cancel := s.ctx()
	defer cancel()
	batch := &pgx.Batch{}
	for _, g := range groups {
		args := make([]any, len(g.params))
		for i, p := range g.params {
			args[i] = p
		}
		batch.Queue(g.tb.get, args...)
	}
	br := s.pool.SendBatch(ctx, batch)
	for _, g := range groups {
		if err := g.tb.scan(br, objs); err != nil {
			_ = br.Close()
			return fmt.Errorf("reading %s objects: %w", g.tb.typ.Name, classify(err))
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("reading objects: %w", classify(err))
	}
	return nil
}

// scan reads the rows of one get query into objs, by id.
func (tb *table) scan(br pgx.BatchResults, objs map[string]*graph.Object) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		id      string
		version int64
		payload string
		fwd     = make([]*string, len(tb.typ.Refs))
		rev     = make([][]string, len(tb.typ.Reverse))
	)
	dest := []any{&id, &version, &payload}
	for i := range fwd {
		dest = append(dest, &fwd[i])
	}
	for i := range rev {
		dest = append(dest, &rev[i])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		o := &graph.Object{ID: id, Version: uint64(version), Type: tb.typ.Name, Payload: []byte(payload)}
		for i, r := range tb.typ.Refs {
			if fwd[i] != nil {
				o.Refs = append(o.Refs, graph.Ref{Field: r.Field, ID: *fwd[i]})
			}
		}
		for i, r := range tb.typ.Reverse {
			for _, child := range rev[i] {
				o.Refs = append(o.Refs, graph.Ref{Field: r.Field, ID: child})
			}
		}
		objs[id] = o
	}
	return rows.Err()
}
