package store_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func openStore(t testing.TB, cfg store.Config) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "origin.db")
	st, err := store.Open(path, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}

func ptr(v uint64) *uint64 { return &v }

func obj(id string, refs ...string) *graph.Object {
	o := &graph.Object{ID: id, Type: "T", Payload: []byte("payload of " + id)}
	for _, r := range refs {
		o.Refs = append(o.Refs, graph.Ref{Field: "f", ID: r})
	}
	return o
}

func TestPutGetRoundTrip(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	in := &graph.Object{
		ID: "a", Version: 99, Type: "Task",
		Refs:    []graph.Ref{{Field: "subtasks", ID: "b"}, {Field: "owner", ID: "a"}},
		Payload: []byte{0, 1, 2, 255},
	}
	version, rev, err := st.Put(in, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), version, "a new object starts at version 1 whatever it carries")
	assert.Equal(t, uint64(1), rev)
	assert.Equal(t, uint64(99), in.Version, "Put does not modify its argument")

	found, missing, err := st.Get([]string{"a"})
	require.NoError(t, err)
	assert.Empty(t, missing)
	require.Len(t, found, 1)
	want := *in
	want.Version = 1
	assert.Equal(t, &want, found[0])
}

func TestGet(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	for _, id := range []string{"a", "b", "c", "bz"} {
		_, _, err := st.Put(obj(id, "a", "zz"), nil)
		require.NoError(t, err)
	}
	tests := []struct {
		name        string
		ids         []string
		wantFound   []string
		wantMissing []string
	}{
		{name: "none", ids: nil},
		{name: "request order", ids: []string{"c", "a", "b"}, wantFound: []string{"c", "a", "b"}},
		{name: "missing listed in order", ids: []string{"x", "a", "y"}, wantFound: []string{"a"}, wantMissing: []string{"x", "y"}},
		{name: "duplicates once", ids: []string{"b", "b", "x", "a", "x", "b"}, wantFound: []string{"b", "a"}, wantMissing: []string{"x"}},
		{name: "all missing", ids: []string{"p", "q"}, wantMissing: []string{"p", "q"}},
		{name: "between and after stored ids", ids: []string{"bb", "b", "zzz", "bz"}, wantFound: []string{"b", "bz"}, wantMissing: []string{"bb", "zzz"}},
		{name: "ascending with gaps", ids: []string{"a", "aa", "b", "bb", "bz", "c", "d"}, wantFound: []string{"a", "b", "bz", "c"}, wantMissing: []string{"aa", "bb", "d"}},
		{name: "ascending past the end, then back", ids: []string{"c", "d", "e", "a", "bz"}, wantFound: []string{"c", "a", "bz"}, wantMissing: []string{"d", "e"}},
		{name: "ascending, far apart", ids: []string{"0", "a", "c"}, wantFound: []string{"a", "c"}, wantMissing: []string{"0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			found, missing, err := st.Get(tc.ids)
			require.NoError(t, err)
			var ids []string
			for _, o := range found {
				ids = append(ids, o.ID)
			}
			assert.Equal(t, tc.wantFound, ids)
			assert.Equal(t, tc.wantMissing, missing)

			// GetEncoded answers the same, each object in its wire form.
			encoded, missing, err := st.GetEncoded(tc.ids)
			require.NoError(t, err)
			assert.Equal(t, tc.wantMissing, missing)
			require.Len(t, encoded, len(found))
			for i, b := range encoded {
				var p lookaheadv1.Object
				require.NoError(t, proto.Unmarshal(b, &p))
				assert.Equal(t, found[i], graphpb.FromProto(&p))
			}
		})
	}
}

func TestGetEncodedReturnsCopies(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	_, _, err := st.Put(obj("a", "b"), nil)
	require.NoError(t, err)
	first, _, err := st.GetEncoded([]string{"a"})
	require.NoError(t, err)
	want := slices.Clone(first[0])
	clear(first[0])
	again, _, err := st.GetEncoded([]string{"a"})
	require.NoError(t, err)
	assert.Equal(t, want, again[0], "changing returned bytes changes nothing stored")
}

func TestPutVersions(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	for want := uint64(1); want <= 3; want++ {
		v, rev, err := st.Put(obj("a"), nil)
		require.NoError(t, err)
		assert.Equal(t, want, v)
		assert.Equal(t, want, rev)
	}
	rev, err := st.Delete("a", nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), rev)

	v, _, err := st.Put(obj("a"), ptr(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(5), v, "a re-created object continues after its deletion (version 4)")
}

func TestConditionalWrites(t *testing.T) {
	tests := []struct {
		name    string
		setup   []*graph.Object // put unconditionally first
		write   func(st *store.Store) error
		wantErr error
	}{
		{
			name:  "put new with expected 0",
			write: func(st *store.Store) error { _, _, err := st.Put(obj("a"), ptr(0)); return err },
		},
		{
			name:    "put existing with expected 0",
			setup:   []*graph.Object{obj("a")},
			write:   func(st *store.Store) error { _, _, err := st.Put(obj("a"), ptr(0)); return err },
			wantErr: store.ErrVersionMismatch,
		},
		{
			name:  "put at current version",
			setup: []*graph.Object{obj("a"), obj("a")},
			write: func(st *store.Store) error { _, _, err := st.Put(obj("a"), ptr(2)); return err },
		},
		{
			name:    "put at stale version",
			setup:   []*graph.Object{obj("a"), obj("a")},
			write:   func(st *store.Store) error { _, _, err := st.Put(obj("a"), ptr(1)); return err },
			wantErr: store.ErrVersionMismatch,
		},
		{
			name:    "put missing with expected 1",
			write:   func(st *store.Store) error { _, _, err := st.Put(obj("a"), ptr(1)); return err },
			wantErr: store.ErrVersionMismatch,
		},
		{
			name:  "delete at current version",
			setup: []*graph.Object{obj("a")},
			write: func(st *store.Store) error { _, err := st.Delete("a", ptr(1)); return err },
		},
		{
			name:    "delete at stale version",
			setup:   []*graph.Object{obj("a"), obj("a")},
			write:   func(st *store.Store) error { _, err := st.Delete("a", ptr(1)); return err },
			wantErr: store.ErrVersionMismatch,
		},
		{
			name:    "delete missing",
			write:   func(st *store.Store) error { _, err := st.Delete("a", nil); return err },
			wantErr: store.ErrNotFound,
		},
		{
			name:    "delete missing with expected",
			write:   func(st *store.Store) error { _, err := st.Delete("a", ptr(0)); return err },
			wantErr: store.ErrNotFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openStore(t, store.Config{})
			for _, o := range tc.setup {
				_, _, err := st.Put(o, nil)
				require.NoError(t, err)
			}
			before := st.Revision()
			err := tc.write(st)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, before+1, st.Revision())
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			assert.Equal(t, before, st.Revision(), "a refused write logs no change")
		})
	}
}

func TestInvalidWrites(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	long := string(make([]byte, graph.MaxIDBytes+1))
	tests := []struct {
		name    string
		write   func() error
		wantErr error
	}{
		{name: "nil object", write: func() error { _, _, err := st.Put(nil, nil); return err }, wantErr: graph.ErrNilObject},
		{name: "empty id", write: func() error { _, _, err := st.Put(obj(""), nil); return err }, wantErr: graph.ErrEmptyID},
		{name: "long id", write: func() error { _, _, err := st.Put(obj(long), nil); return err }, wantErr: graph.ErrIDTooLong},
		{name: "empty ref id", write: func() error { _, _, err := st.Put(obj("a", ""), nil); return err }, wantErr: graph.ErrEmptyID},
		{name: "delete empty id", write: func() error { _, err := st.Delete("", nil); return err }, wantErr: graph.ErrEmptyID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, tc.write(), tc.wantErr)
		})
	}
	assert.Zero(t, st.Revision())
}

func TestChanges(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	_, _, err := st.Put(obj("a"), nil)
	require.NoError(t, err)
	_, _, err = st.Put(obj("b"), nil)
	require.NoError(t, err)
	_, _, err = st.Put(obj("a"), nil)
	require.NoError(t, err)
	_, err = st.Delete("b", nil)
	require.NoError(t, err)

	all := []store.Change{
		{Revision: 1, ID: "a", Version: 1},
		{Revision: 2, ID: "b", Version: 1},
		{Revision: 3, ID: "a", Version: 2},
		{Revision: 4, ID: "b", Version: 2, Deleted: true},
	}
	tests := []struct {
		name  string
		from  uint64
		limit int
		want  []store.Change
	}{
		{name: "all", from: 0, limit: 0, want: all},
		{name: "limit", from: 0, limit: 2, want: all[:2]},
		{name: "after revision", from: 2, limit: 10, want: all[2:]},
		{name: "after last", from: 4, limit: 10, want: nil},
		{name: "beyond last", from: 100, limit: 10, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := st.Changes(tc.from, tc.limit)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, uint64(4), st.Revision())
}

func TestChangedClosedOnCommit(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	ch := st.Changed()
	select {
	case <-ch:
		t.Fatal("Changed closed before any write")
	default:
	}
	_, _, err := st.Put(obj("a"), nil)
	require.NoError(t, err)
	_, ok := <-ch
	assert.False(t, ok, "the channel taken before the write is closed by it")

	next := st.Changed()
	_, _, err = st.Put(obj("a"), ptr(7))
	require.ErrorIs(t, err, store.ErrVersionMismatch)
	select {
	case <-next:
		t.Fatal("a refused write closed Changed")
	default:
	}

	require.NoError(t, st.Close())
	_, ok = <-next
	assert.False(t, ok, "Close wakes waiters")
}

func TestReopenPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "origin.db")
	st, err := store.Open(path, store.Config{})
	require.NoError(t, err)
	_, _, err = st.Put(obj("a", "b"), nil)
	require.NoError(t, err)
	_, _, err = st.Put(obj("b"), nil)
	require.NoError(t, err)
	_, err = st.Delete("b", nil)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.NoError(t, st.Close(), "Close is idempotent")
	_, _, err = st.Get([]string{"a"})
	assert.ErrorIs(t, err, store.ErrClosed)

	st, err = store.Open(path, store.Config{})
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, uint64(3), st.Revision())
	found, missing, err := st.Get([]string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.Equal(t, obj("a", "b").Refs, found[0].Refs)
	assert.Equal(t, []string{"b"}, missing)

	v, rev, err := st.Put(obj("b"), ptr(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), v, "the tombstone of b survived the reopen")
	assert.Equal(t, uint64(4), rev, "revisions continue after a reopen")
}

func TestOpenErrors(t *testing.T) {
	t.Run("invalid config", func(t *testing.T) {
		_, err := store.Open(filepath.Join(t.TempDir(), "x.db"), store.Config{LockTimeout: -1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "lock timeout -1ns is negative")
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := store.Open(filepath.Join(t.TempDir(), "no", "such", "x.db"), store.Config{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "opening store")
	})
	t.Run("locked", func(t *testing.T) {
		_, path := openStore(t, store.Config{})
		_, err := store.Open(path, store.Config{LockTimeout: 1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "locked by another process")
	})
}

func TestLoad(t *testing.T) {
	gen := graph.TaskTrees{Roots: 3, Fanout: 3, Levels: 3, PayloadBytes: 4, Seed: 1}
	perRoot := gen.PerRoot() // 13
	tests := []struct {
		name      string
		batchSize int
		reopen    bool
	}{
		{name: "one batch", batchSize: 1000},
		{name: "batch boundary inside", batchSize: 5},
		{name: "batch size divides total", batchSize: 13},
		{name: "reopened from disk", batchSize: 5, reopen: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, path := openStore(t, store.Config{BatchSize: tc.batchSize})
			empty, err := st.Empty()
			require.NoError(t, err)
			assert.True(t, empty)

			var want []*graph.Object
			n, err := st.Load(func(emit graph.EmitFunc) error {
				return gen.Generate(func(o *graph.Object) error {
					want = append(want, o)
					return emit(o)
				})
			})
			require.NoError(t, err)
			assert.Equal(t, 3*perRoot, n)
			if tc.reopen {
				require.NoError(t, st.Close())
				st, err = store.Open(path, store.Config{})
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
			}
			assert.Equal(t, uint64(n), st.Revision(), "every loaded object gets a revision")
			changes, err := st.Changes(0, 0)
			require.NoError(t, err)
			require.Len(t, changes, n)
			for i, c := range changes {
				assert.Equal(t, want[i].ID, c.ID, "change %d", i+1)
			}

			ids := make([]string, len(want))
			for i, o := range want {
				ids[i] = o.ID
			}
			found, missing, err := st.Get(ids)
			require.NoError(t, err)
			assert.Empty(t, missing)
			assert.Equal(t, want, found, "objects keep the generator's version (1)")

			empty, err = st.Empty()
			require.NoError(t, err)
			assert.False(t, empty)
		})
	}
}

func TestLoadVersions(t *testing.T) {
	st, _ := openStore(t, store.Config{})
	_, _, err := st.Put(obj("old"), nil)
	require.NoError(t, err)
	_, _, err = st.Put(obj("old"), nil) // version 2
	require.NoError(t, err)

	in := []*graph.Object{
		{ID: "zero", Version: 0},
		{ID: "seven", Version: 7},
		{ID: "old", Version: 1},
		{ID: "twice", Version: 3},
		{ID: "twice", Version: 3},
	}
	n, err := st.Load(func(emit graph.EmitFunc) error {
		for _, o := range in {
			if err := emit(o); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	found, _, err := st.Get([]string{"zero", "seven", "old", "twice"})
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, o := range found {
		got[o.ID] = o.Version
	}
	assert.Equal(t, map[string]uint64{"zero": 1, "seven": 7, "old": 3, "twice": 4}, got,
		"versions never go backwards, even within one batch")
}

func TestLoadErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		objects []*graph.Object
		genErr  error
		wantErr error
		wantMsg string
	}{
		{
			name:    "invalid object",
			objects: []*graph.Object{obj("a"), obj("b"), obj("")},
			wantErr: graph.ErrEmptyID, wantMsg: `object 3 (""): graph: empty id`,
		},
		{name: "nil object", objects: []*graph.Object{nil}, wantErr: graph.ErrNilObject, wantMsg: "object 1: graph: nil object"},
		{name: "generator error", objects: []*graph.Object{obj("a"), obj("b"), obj("c")}, genErr: boom, wantErr: boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openStore(t, store.Config{BatchSize: 2}) // a batch is staged before the failure
			n, err := st.Load(func(emit graph.EmitFunc) error {
				for _, o := range tc.objects {
					if err := emit(o); err != nil {
						return err
					}
				}
				return tc.genErr
			})
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.Contains(t, err.Error(), "none stored")
			assert.Zero(t, n)
			assert.Zero(t, st.Revision(), "a failed load commits nothing")
			empty, err := st.Empty()
			require.NoError(t, err)
			assert.True(t, empty, "a failed load stores nothing")

			// The rerun loads into the untouched store.
			n, err = st.Load(func(emit graph.EmitFunc) error { return emit(obj("z")) })
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, uint64(1), st.Revision())
		})
	}
}

// TestLoadNDJSONFailingHalfway loads a file whose line 4 is malformed into a
// store that already holds an object: the load keeps nothing of lines 1-3 and
// leaves the existing object as it was, and the corrected file then loads.
func TestLoadNDJSONFailingHalfway(t *testing.T) {
	st, path := openStore(t, store.Config{BatchSize: 2})
	_, _, err := st.Put(obj("kept"), nil)
	require.NoError(t, err)

	lines := []string{
		`{"id":"a","type":"T","refs":[{"field":"f","id":"b"}]}`,
		`{"id":"b","type":"T"}`,
		`{"id":"kept","type":"T","payload_text":"overwritten"}`,
		`{"id":"c","type":"T","refs":[{"field":"f"}]`, // unterminated
		`{"id":"d","type":"T"}`,
	}
	load := func(lines []string) (int, error) {
		return st.Load(func(emit graph.EmitFunc) error {
			_, err := graph.DecodeNDJSON(strings.NewReader(strings.Join(lines, "\n")+"\n"), emit)
			return err
		})
	}
	n, err := load(lines)
	var lineErr *graph.NDJSONError
	require.ErrorAs(t, err, &lineErr)
	assert.Equal(t, 4, lineErr.Line)
	assert.Zero(t, n)

	// Nothing of the file, also after reopening the file from disk.
	require.NoError(t, st.Close())
	st, err = store.Open(path, store.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	assert.Equal(t, uint64(1), st.Revision(), "only the Put's revision")
	found, missing, err := st.Get([]string{"a", "b", "kept", "d"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "d"}, missing)
	require.Len(t, found, 1)
	assert.Equal(t, obj("kept").Payload, found[0].Payload)
	assert.Equal(t, uint64(1), found[0].Version)

	// The rerun of the fixed file loads all of it.
	lines[3] = `{"id":"c","type":"T"}`
	n, err = load(lines)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	found, missing, err = st.Get([]string{"a", "b", "c", "d", "kept"})
	require.NoError(t, err)
	assert.Empty(t, missing)
	assert.Len(t, found, 5)
	assert.Equal(t, uint64(6), st.Revision())
}
