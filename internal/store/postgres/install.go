package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// triggerName is the name of the change trigger on every mapped table.
const triggerName = "lookahead_changes"

func notifyChannel(schema string) string { return schema + "_changes" }

// installSQL creates the change log: the changes table (a bigserial revision
// per change), the per-object versions, the compaction mark, and
// log_change, which the tables' triggers call. Writers of the change log are
// serialized by a transaction-scoped advisory lock taken before the
// revision is drawn, so revisions become visible in commit order and a
// watcher reading "after revision r" never skips one that commits late.
const installSQL = `
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.changes (
	revision bigserial PRIMARY KEY,
	id text NOT NULL,
	version bigint NOT NULL,
	deleted boolean NOT NULL,
	at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {s}.versions (
	id text PRIMARY KEY,
	version bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.meta (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	compacted bigint NOT NULL DEFAULT 0
);
INSERT INTO {s}.meta DEFAULT VALUES ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION {s}.log_change(obj text, gone boolean) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE v bigint;
BEGIN
	IF obj IS NULL THEN RETURN; END IF;
	PERFORM pg_advisory_xact_lock(hashtext({lit}));
	INSERT INTO {s}.versions AS x (id, version) VALUES (obj, 2)
		ON CONFLICT (id) DO UPDATE SET version = x.version + 1 RETURNING version INTO v;
	INSERT INTO {s}.changes (id, version, deleted) VALUES (obj, v, gone);
	PERFORM pg_notify({chan}, '');
END $f$;
CREATE OR REPLACE FUNCTION {s}.compact(through bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE c bigint;
BEGIN
	DELETE FROM {s}.changes WHERE revision <= through;
	UPDATE {s}.meta SET compacted = greatest(compacted, through) RETURNING compacted INTO c;
	RETURN c;
END $f$;
`

// Install creates the change log in the mapping's change-log schema and a
// trigger on every mapped table that records its changes there (and a
// change of every object whose reverse refs a row joins or leaves). It adds
// no column and changes no row of the mapped tables, and may be run again
// after the mapping changed. Rows written before Install have version 1.
func Install(ctx context.Context, url string, m *Mapping) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	tables, err := compile(ctx, pool, m)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s := pgx.Identifier{m.ChangeLog}.Sanitize()
	r := strings.NewReplacer("{s}", s, "{lit}", quoteLiteral(m.ChangeLog+".changes"), "{chan}", quoteLiteral(notifyChannel(m.ChangeLog)))
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: installing the change log: %w", classify(err))
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, r.Replace(installSQL)); err != nil {
		return fmt.Errorf("postgres: installing the change log: %w", err)
	}
	for i := range m.Types {
		tb := tables[m.Types[i].Name]
		fn := pgx.Identifier{m.ChangeLog, "changed_" + tb.typ.Name}.Sanitize()
		sql := "CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $f$\nBEGIN\n" +
			triggerBody(s, tb, parentsOf(tb, tables, m)) + "\tRETURN NULL;\nEND $f$;\n" +
			"DROP TRIGGER IF EXISTS " + triggerName + " ON " + tb.qname + ";\n" +
			"CREATE TRIGGER " + triggerName + " AFTER INSERT OR UPDATE OR DELETE ON " + tb.qname +
			" FOR EACH ROW EXECUTE FUNCTION " + fn + "();\n"
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("postgres: installing the trigger of %s: %w", tb.typ.Table, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: installing the change log: %w", classify(err))
	}
	return nil
}

// parent is a reverse ref that rows of a table appear in: the id, formatted
// from the child row's columns, of the object whose refs change with it.
type parent struct {
	id   format
	cols []string // child columns, in the parent format's placeholder order
}

func parentsOf(child *table, tables map[string]*table, m *Mapping) []parent {
	var ps []parent
	for i := range m.Types {
		p := tables[m.Types[i].Name]
		for _, r := range p.typ.Reverse {
			if tables[r.Type] == child {
				ps = append(ps, parent{id: p.id, cols: r.Columns})
			}
		}
	}
	return ps
}

// triggerBody logs the row's own change (a delete when the row goes or its
// id changes) and a change of each parent object the row leaves or joins.
func triggerBody(s string, tb *table, parents []parent) string {
	oldID, newID := idExpr(tb.id, "OLD", tb.keyCols), idExpr(tb.id, "NEW", tb.keyCols)
	var b strings.Builder
	logc := func(indent, expr, gone string) {
		b.WriteString(indent + "PERFORM " + s + ".log_change(" + expr + ", " + gone + ");\n")
	}
	b.WriteString("\tIF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND " + oldID + " IS DISTINCT FROM " + newID + ") THEN\n")
	logc("\t\t", oldID, "true")
	b.WriteString("\tEND IF;\n\tIF TG_OP <> 'DELETE' THEN\n")
	logc("\t\t", newID, "false")
	b.WriteString("\tEND IF;\n")
	for _, p := range parents {
		po, pn := idExpr(p.id, "OLD", p.cols), idExpr(p.id, "NEW", p.cols)
		b.WriteString("\tIF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND " + po + " IS DISTINCT FROM " + pn + ") THEN\n")
		logc("\t\t", po, "false")
		b.WriteString("\tEND IF;\n\tIF TG_OP <> 'DELETE' THEN\n")
		logc("\t\t", pn, "false")
		b.WriteString("\tEND IF;\n")
	}
	return b.String()
}

// checkInstalled fails naming what Install would create: the change log or
// a mapped table's trigger.
func checkInstalled(ctx context.Context, pool *pgxpool.Pool, m *Mapping, tables map[string]*table) error {
	var ok bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", m.ChangeLog+".meta").Scan(&ok); err != nil {
		return fmt.Errorf("looking up the change log: %w", classify(err))
	}
	if !ok {
		return fmt.Errorf("no change log in schema %q: run 'origin postgres-install' with this mapping first", m.ChangeLog)
	}
	var errs []error
	for i := range m.Types {
		tb := tables[m.Types[i].Name]
		err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2)", tb.qname, triggerName).Scan(&ok)
		if err != nil {
			return fmt.Errorf("looking up the trigger of %s: %w", tb.typ.Table, classify(err))
		}
		if !ok {
			errs = append(errs, fmt.Errorf("table %q has no %s trigger: run 'origin postgres-install' with this mapping", tb.typ.Table, triggerName))
		}
	}
	return errors.Join(errs...)
}
