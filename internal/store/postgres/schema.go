package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// column is one column of a mapped table, as the catalog describes it.
type column struct {
	typ     string // format_type, e.g. "bigint", "character varying(20)"
	typname string // pg_type.typname, e.g. "int8"
}

// table is a Type checked against the catalog, with its SQL prepared.
type table struct {
	typ      *Type
	qname    string // quoted, schema-qualified table name
	id       format
	keyCols  []string
	keyTypes []column
	cols     map[string]column
	payload  []string // payload columns
	get      string   // batch read, parameters: one text[] per key column
}

// catalog reads the columns of table name; ok is false when there is no
// such table.
func catalog(ctx context.Context, pool *pgxpool.Pool, name string) (qname string, cols map[string]column, order []string, ok bool, err error) {
	var oid *uint32
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1)::oid", name).Scan(&oid); err != nil {
		return "", nil, nil, false, fmt.Errorf("looking up table %s: %w", name, err)
	}
	if oid == nil {
		return "", nil, nil, false, nil
	}
	var schema, rel string
	if err := pool.QueryRow(ctx, "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1", *oid).Scan(&schema, &rel); err != nil {
		return "", nil, nil, false, fmt.Errorf("looking up table %s: %w", name, err)
	}
	rows, err := pool.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, *oid)
	if err != nil {
		return "", nil, nil, false, fmt.Errorf("reading columns of %s: %w", name, err)
	}
	cols = map[string]column{}
	for rows.Next() {
		var n string
		var c column
		if err := rows.Scan(&n, &c.typ, &c.typname); err != nil {
			return "", nil, nil, false, fmt.Errorf("reading columns of %s: %w", name, err)
		}
		cols[n] = c
		order = append(order, n)
	}
	if err := rows.Err(); err != nil {
		return "", nil, nil, false, fmt.Errorf("reading columns of %s: %w", name, err)
	}
	return pgx.Identifier{schema, rel}.Sanitize(), cols, order, true, nil
}

// compile checks every table and column the mapping names against the
// catalog and builds the SQL; the error names each missing one.
func compile(ctx context.Context, pool *pgxpool.Pool, m *Mapping) (map[string]*table, error) {
	tables := make(map[string]*table, len(m.Types))
	var errs []error
	for i := range m.Types {
		t := &m.Types[i]
		qname, cols, order, ok, err := catalog(ctx, pool, t.Table)
		if err != nil {
			return nil, err
		}
		if !ok {
			errs = append(errs, fmt.Errorf("type %q: table %q does not exist", t.Name, t.Table))
			continue
		}
		f, _ := parseFormat(t.ID) // checked by ParseMapping
		tb := &table{typ: t, qname: qname, id: f, keyCols: f.columns(), cols: cols}
		need := func(what, col string) {
			if _, ok := cols[col]; !ok {
				errs = append(errs, fmt.Errorf("type %q: table %q has no column %q (%s)", t.Name, t.Table, col, what))
			}
		}
		for _, c := range tb.keyCols {
			need("id", c)
			tb.keyTypes = append(tb.keyTypes, cols[c])
		}
		tb.payload = t.Payload
		if len(tb.payload) == 0 {
			var refCols []string
			for _, r := range t.Refs {
				refCols = append(refCols, r.Columns...)
			}
			for _, c := range order {
				if !contains(tb.keyCols, c) && !contains(refCols, c) {
					tb.payload = append(tb.payload, c)
				}
			}
		}
		for _, c := range tb.payload {
			need("payload", c)
		}
		for _, r := range t.Refs {
			for _, c := range r.Columns {
				need("ref "+r.Field, c)
			}
		}
		tables[t.Name] = tb
	}
	// Reverse refs name columns of other tables: check them once all are known.
	errs = append(errs, checkReverse(tables)...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("mapping does not match the database: %w", err)
	}
	for _, tb := range tables {
		tb.get = tb.getSQL(tables, m.ChangeLog)
	}
	return tables, nil
}

// checkReverse reports the reverse refs that name a column their child
// table does not have.
func checkReverse(tables map[string]*table) (errs []error) {
	for _, tb := range tables {
		for _, r := range tb.typ.Reverse {
			child := tables[r.Type]
			if child == nil {
				continue // its table is missing: already reported
			}
			for _, c := range r.Columns {
				if _, ok := child.cols[c]; !ok {
					errs = append(errs, fmt.Errorf("type %q: reverse ref %q: table %q has no column %q", tb.typ.Name, r.Field, child.typ.Table, c))
				}
			}
			for _, o := range r.OrderBy {
				c, _, _ := parseOrder(o)
				if _, ok := child.cols[c]; !ok {
					errs = append(errs, fmt.Errorf("type %q: reverse ref %q: order_by: table %q has no column %q", tb.typ.Name, r.Field, child.typ.Table, c))
				}
			}
		}
	}
	return errs
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func col(alias, name string) string { return alias + "." + pgx.Identifier{name}.Sanitize() }

// idExpr is the SQL that formats an object id from a row: f's literal text
// and, in place of its placeholders, cols of the row alias (in placeholder
// order) as text. It is NULL when one of them is NULL.
func idExpr(f format, alias string, cols []string) string {
	var b strings.Builder
	i := 0
	for j, p := range f.parts {
		if j > 0 {
			b.WriteString(" || ")
		}
		if p.column == "" {
			b.WriteString(quoteLiteral(p.literal))
			continue
		}
		b.WriteString(col(alias, cols[i]) + "::text")
		i++
	}
	return "(" + b.String() + ")"
}

// keyMatch is the WHERE clause matching the key columns of alias against
// the text[] parameters $1..$n, cast to the columns' types so that indexes
// serve it.
func keyMatch(alias string, cols []string, types []column) string {
	if len(cols) == 1 {
		return col(alias, cols[0]) + " = ANY(" + castParam(1, types[0]) + ")"
	}
	lhs := make([]string, len(cols))
	params := make([]string, len(cols))
	for i, c := range cols {
		lhs[i] = col(alias, c)
		params[i] = castParam(i+1, types[i])
	}
	return "(" + strings.Join(lhs, ", ") + ") IN (SELECT * FROM unnest(" + strings.Join(params, ", ") + "))"
}

func castParam(n int, c column) string {
	return "$" + strconv.Itoa(n) + "::text[]::" + c.typ + "[]"
}

// payloadExpr is the JSON object of the payload columns.
func payloadExpr(alias string, cols []string) string {
	if len(cols) == 0 {
		return "'{}'"
	}
	var chunks []string
	for len(cols) > 0 { // json_build_object takes at most 100 arguments
		n := min(len(cols), 50)
		args := make([]string, 0, 2*n)
		for _, c := range cols[:n] {
			args = append(args, quoteLiteral(c), col(alias, c))
		}
		chunks = append(chunks, "json_build_object("+strings.Join(args, ", ")+")")
		cols = cols[n:]
	}
	if len(chunks) == 1 {
		return chunks[0] + "::text"
	}
	return "(" + strings.Join(chunks, "::jsonb || ") + "::jsonb)::text"
}

// getSQL reads a batch of rows: id, version, payload, one column per
// forward ref (NULL = none) and one text[] per reverse ref.
func (tb *table) getSQL(tables map[string]*table, changeLog string) string {
	id := idExpr(tb.id, "t", tb.keyCols)
	sel := []string{id, "coalesce(v.version, 1)", payloadExpr("t", tb.payload)}
	for _, r := range tb.typ.Refs {
		sel = append(sel, idExpr(tables[r.Type].id, "t", r.Columns))
	}
	for _, r := range tb.typ.Reverse {
		sel = append(sel, reverseExpr(tb, tables[r.Type], r))
	}
	return "SELECT " + strings.Join(sel, ", ") +
		" FROM " + tb.qname + " t LEFT JOIN " + pgx.Identifier{changeLog, "versions"}.Sanitize() + " v ON v.id = " + id +
		" WHERE " + keyMatch("t", tb.keyCols, tb.keyTypes)
}

// reverseExpr is the array of the ids of child rows pointing at row t.
func reverseExpr(parent, child *table, r Reverse) string {
	conds := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		conds[i] = col("c", c) + " = " + col("t", parent.keyCols[i])
	}
	var order []string
	for _, o := range r.OrderBy {
		c, desc, _ := parseOrder(o)
		s := col("c", c)
		if desc {
			s += " DESC"
		}
		order = append(order, s)
	}
	if len(order) == 0 {
		for _, c := range child.keyCols {
			order = append(order, col("c", c))
		}
	}
	return "ARRAY(SELECT " + idExpr(child.id, "c", child.keyCols) + " FROM " + child.qname + " c WHERE " +
		strings.Join(conds, " AND ") + " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + strconv.Itoa(r.Limit) + ")"
}
