package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mapping says how rows of an existing schema become lookahead objects. It
// is read from YAML (see docs/postgres.md for the reference).
type Mapping struct {
	// ChangeLog is the schema of the change log, the version table and the
	// trigger functions; empty = "lookahead".
	ChangeLog string `yaml:"change_log"`
	// Types are the object types, one table each.
	Types []Type `yaml:"types"`
}

// Type maps one table to one object type.
type Type struct {
	// Name is the object's type, as objects report it.
	Name string `yaml:"name"`
	// Table is the table, optionally schema-qualified ("public.orders").
	Table string `yaml:"table"`
	// ID is the id format: literal text and {column} placeholders naming
	// the key columns, e.g. "orders/{id}". It must start with literal text
	// that no other type's format starts with, and placeholders must be
	// separated by literal text.
	ID string `yaml:"id"`
	// Payload lists the columns of the payload; empty = every column that is
	// neither a key column nor a forward ref's column.
	Payload []string `yaml:"payload,omitempty"`
	// Encoding of the payload; only "json" (the default): a JSON object of
	// column name → value.
	Encoding string `yaml:"encoding,omitempty"`
	// Writable allows Put and Delete on this type.
	Writable bool `yaml:"writable,omitempty"`
	// Refs are forward references: columns of this row holding the key of a
	// row of another type (order.customer_id → customer).
	Refs []Ref `yaml:"refs,omitempty"`
	// Reverse are reverse references: the rows of another type whose columns
	// hold this row's key (customer → its orders).
	Reverse []Reverse `yaml:"reverse,omitempty"`
}

// Ref is a forward reference.
type Ref struct {
	// Field is the ref's field name.
	Field string `yaml:"field"`
	// Type is the referenced type's name.
	Type string `yaml:"type"`
	// Columns of this table holding the referenced key, in the order of the
	// referenced type's id placeholders. A NULL in any of them means no ref.
	Columns []string `yaml:"columns"`
}

// Reverse is a reverse reference.
type Reverse struct {
	// Field is the ref's field name.
	Field string `yaml:"field"`
	// Type is the referring type's name.
	Type string `yaml:"type"`
	// Columns of the referring type's table holding this row's key, in the
	// order of this type's id placeholders.
	Columns []string `yaml:"columns"`
	// OrderBy orders the referring rows: "column" or "column desc" items;
	// empty = by the referring type's key.
	OrderBy []string `yaml:"order_by,omitempty"`
	// Limit caps the refs of this field per object; 0 = 1000.
	Limit int `yaml:"limit,omitempty"`
}

// ReadMapping reads and checks a mapping file.
func ReadMapping(path string) (*Mapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading mapping: %w", err)
	}
	m, err := ParseMapping(b)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	return m, nil
}

// ParseMapping decodes a mapping, rejecting unknown keys, fills defaults and
// checks what can be checked without a database.
func ParseMapping(b []byte) (*Mapping, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m Mapping
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if m.ChangeLog == "" {
		m.ChangeLog = "lookahead"
	}
	for i := range m.Types {
		t := &m.Types[i]
		if t.Encoding == "" {
			t.Encoding = "json"
		}
		for j := range t.Reverse {
			if t.Reverse[j].Limit == 0 {
				t.Reverse[j].Limit = 1000
			}
		}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// validate checks the mapping's own consistency; the catalog check happens
// when a store opens.
func (m *Mapping) validate() error {
	var errs []error
	if len(m.Types) == 0 {
		errs = append(errs, errors.New("no types"))
	}
	byName := map[string]*Type{}
	for i := range m.Types {
		t := &m.Types[i]
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("types[%d]: no name", i))
			continue
		}
		if byName[t.Name] != nil {
			errs = append(errs, fmt.Errorf("type %q: defined twice", t.Name))
		}
		byName[t.Name] = t
	}
	prefixes := map[string]string{}
	for i := range m.Types {
		t := &m.Types[i]
		errs = append(errs, t.validate(byName))
		f, err := parseFormat(t.ID)
		if err != nil {
			continue
		}
		for p, other := range prefixes {
			if strings.HasPrefix(p, f.prefix()) || strings.HasPrefix(f.prefix(), p) {
				errs = append(errs, fmt.Errorf("type %q: id prefix %q overlaps type %q's %q", t.Name, f.prefix(), other, p))
			}
		}
		prefixes[f.prefix()] = t.Name
	}
	return errors.Join(errs...)
}

func (t *Type) validate(byName map[string]*Type) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("type %q: "+format, append([]any{t.Name}, args...)...))
	}
	if t.Table == "" {
		bad("no table")
	}
	f, err := parseFormat(t.ID)
	if err != nil {
		bad("id %q: %v", t.ID, err)
	}
	if t.Encoding != "json" {
		bad("encoding %q: only json is supported", t.Encoding)
	}
	fields := map[string]bool{}
	field := func(name string) {
		if name == "" {
			bad("a ref has no field name")
		} else if fields[name] {
			bad("ref field %q defined twice", name)
		}
		fields[name] = true
	}
	for _, r := range t.Refs {
		field(r.Field)
		target := byName[r.Type]
		if target == nil {
			bad("ref %q: unknown type %q", r.Field, r.Type)
			continue
		}
		if tf, err := parseFormat(target.ID); err == nil && len(tf.columns()) != len(r.Columns) {
			bad("ref %q: %d columns for type %q's %d key columns", r.Field, len(r.Columns), r.Type, len(tf.columns()))
		}
	}
	for _, r := range t.Reverse {
		field(r.Field)
		if byName[r.Type] == nil {
			bad("reverse ref %q: unknown type %q", r.Field, r.Type)
			continue
		}
		if err == nil && len(f.columns()) != len(r.Columns) {
			bad("reverse ref %q: %d columns for %d key columns", r.Field, len(r.Columns), len(f.columns()))
		}
		if r.Limit < 0 {
			bad("reverse ref %q: limit %d is negative", r.Field, r.Limit)
		}
		for _, o := range r.OrderBy {
			if _, _, err := parseOrder(o); err != nil {
				bad("reverse ref %q: order_by %q: %v", r.Field, o, err)
			}
		}
	}
	return errors.Join(errs...)
}

// parseOrder splits an order_by item into its column and direction.
func parseOrder(s string) (column string, desc bool, err error) {
	parts := strings.Fields(s)
	switch {
	case len(parts) == 1:
		return parts[0], false, nil
	case len(parts) == 2 && strings.EqualFold(parts[1], "asc"):
		return parts[0], false, nil
	case len(parts) == 2 && strings.EqualFold(parts[1], "desc"):
		return parts[0], true, nil
	}
	return "", false, errors.New(`want "column", "column asc" or "column desc"`)
}

// format is a parsed id format: literal text and placeholders alternate,
// starting with literal text.
type format struct {
	parts []formatPart
}

type formatPart struct {
	literal string // when column is empty
	column  string
}

func parseFormat(s string) (format, error) {
	var f format
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			f.parts = append(f.parts, formatPart{literal: s})
			break
		}
		if open > 0 {
			f.parts = append(f.parts, formatPart{literal: s[:open]})
		} else if len(f.parts) > 0 {
			return format{}, errors.New("placeholders must be separated by literal text")
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return format{}, errors.New("unclosed {")
		}
		col := s[open+1 : open+end]
		if col == "" || strings.ContainsAny(col, "{") {
			return format{}, errors.New("empty or nested placeholder")
		}
		f.parts = append(f.parts, formatPart{column: col})
		s = s[open+end+1:]
	}
	switch {
	case len(f.parts) == 0 || f.parts[0].column != "":
		return format{}, errors.New("must start with literal text, e.g. \"orders/{id}\"")
	case len(f.columns()) == 0:
		return format{}, errors.New("no {column} placeholder")
	}
	return f, nil
}

func (f format) prefix() string { return f.parts[0].literal }

func (f format) columns() []string {
	var cols []string
	for _, p := range f.parts {
		if p.column != "" {
			cols = append(cols, p.column)
		}
	}
	return cols
}

// parse extracts the key values of id, one per placeholder; ok is false
// when id does not have this format. A placeholder's value ends at the first
// occurrence of the literal text after it.
func (f format) parse(id string) (values []string, ok bool) {
	rest := id
	for i, p := range f.parts {
		if p.column == "" {
			if !strings.HasPrefix(rest, p.literal) {
				return nil, false
			}
			rest = rest[len(p.literal):]
			continue
		}
		end := len(rest)
		if i+1 < len(f.parts) {
			end = strings.Index(rest, f.parts[i+1].literal)
			if end < 0 {
				return nil, false
			}
		}
		if end == 0 {
			return nil, false
		}
		values = append(values, rest[:end])
		rest = rest[end:]
	}
	return values, rest == ""
}
