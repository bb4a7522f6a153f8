package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	lookahead "github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// TestW2ReadsSortsByCauseAndCountsWaitsInARow checks the near-cache row's
// breakdown: every read lands in one class, only the sidecar's count as
// waits, and a wait counts as "again" only right after another wait.
func TestW2ReadsSortsByCauseAndCountsWaitsInARow(t *testing.T) {
	var r w2Reads
	sidecar := func(c lookaheadv1.CacheStatus) lookahead.Status { return lookahead.Status{Cache: c} }
	near := lookahead.Status{Near: true}
	r.add(near, time.Microsecond)
	r.add(sidecar(lookaheadv1.CacheStatus_CACHE_STATUS_MISS), 3*time.Millisecond)
	r.add(sidecar(lookaheadv1.CacheStatus_CACHE_STATUS_JOINED), 2*time.Millisecond)
	r.add(near, time.Microsecond)
	r.add(sidecar(lookaheadv1.CacheStatus_CACHE_STATUS_HIT_PREFETCHED), 500*time.Microsecond)
	r.add(sidecar(lookaheadv1.CacheStatus_CACHE_STATUS_HIT), 100*time.Microsecond)

	assert.Equal(t, 2, r.Near)
	assert.Equal(t, 2, r.Held)
	assert.Equal(t, 1, r.InFlight)
	assert.Equal(t, 1, r.NotFetched)
	assert.Equal(t, 5600*time.Microsecond, r.Wait, "near hits are not waits")
	assert.Equal(t, 2*time.Microsecond, r.InNear)
	assert.Equal(t, 2100*time.Microsecond, r.Again, "the joined read after the miss and the hit after the held one")
}
