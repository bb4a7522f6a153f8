package origin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestWatchDropsChangesOfInvalidIDs: a change to an id no object can have
// (empty, or of a megabyte) never reaches the caller, where its id would be
// kept as a version floor; it is counted, and the valid changes around it
// arrive.
func TestWatchDropsChangesOfInvalidIDs(t *testing.T) {
	o := origintest.New()
	r := newRigWith(t, o, origin.Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := r.client.Watch(ctx, nil)
	require.NoError(t, err)
	o.Announce(origin.Change{Revision: 1, ID: "a", Version: 2},
		origin.Change{Revision: 2, ID: strings.Repeat("x", 1<<20), Version: 2},
		origin.Change{Revision: 3, ID: "", Version: 2},
		origin.Change{Revision: 4, ID: "b", Version: 3, Deleted: true})
	changes, err := w.Recv()
	require.NoError(t, err)
	assert.Equal(t, []origin.Change{{Revision: 1, ID: "a", Version: 2}, {Revision: 4, ID: "b", Version: 3, Deleted: true}}, changes)
	assert.Equal(t, map[string]float64{metrics.MalformedInvalidID: 2}, malformed(r.m))
}
