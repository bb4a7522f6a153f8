package store

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// TestOpenDropsAnUnfinishedLoad stages objects the way a load killed before
// its last transaction leaves them, and reopens the store: nothing of it is
// live, the staging bucket is gone, and a new load works.
func TestOpenDropsAnUnfinishedLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "origin.db")
	st, err := Open(path, Config{BatchSize: 1})
	require.NoError(t, err)
	n, err := st.stage(func(emit graph.EmitFunc) error { return emit(&graph.Object{ID: "a"}) })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, st.Close()) // the process dies before switchIn

	st, err = Open(path, Config{})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.view(func(tx *bolt.Tx) error {
		assert.Nil(t, tx.Bucket(bucketLoad), "staging bucket left behind")
		return nil
	}))
	empty, err := st.Empty()
	require.NoError(t, err)
	assert.True(t, empty)
	assert.Zero(t, st.Revision())

	n, err = st.Load(func(emit graph.EmitFunc) error { return emit(&graph.Object{ID: "b"}) })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	found, missing, err := st.Get([]string{"a", "b"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, missing)
	require.Len(t, found, 1)
	assert.Equal(t, uint64(1), st.Revision())
}
