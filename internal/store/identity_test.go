package store_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/store"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestDatasetIDSurvivesReopenAndDiffersPerStore(t *testing.T) {
	st, path := openStore(t, store.Config{})
	id := st.Identity()
	assert.Regexp(t, uuidRE, id)
	_, _, err := st.Put(obj("a"), nil)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	again, err := store.Open(path, store.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Close() })
	assert.Equal(t, id, again.Identity(), "same file, same dataset")

	other, _ := openStore(t, store.Config{})
	assert.Regexp(t, uuidRE, other.Identity())
	assert.NotEqual(t, id, other.Identity(), "a store created anew is another dataset")
}
