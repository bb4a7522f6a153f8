package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lookahead-dev/lookahead/internal/cache"
)

func TestMemoryLimitFollowsTheBudgets(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	c := cache.Config{MainBytes: 256 << 20, PrefetchBytes: 64 << 20}

	t.Setenv("GOMEMLIMIT", "")
	limit, source := setMemoryLimit(c, 64<<20, 64<<20, 32<<20)
	assert.Equal(t, int64(2*320<<20+4*64<<20+2*64<<20+2*32<<20), limit,
		"twice the tiers plus four messages plus the streams' budget twice (streams and walks) plus the two queues' bytes")
	assert.Equal(t, "cache budgets", source)
	assert.Equal(t, limit, debug.SetMemoryLimit(-1), "applied")

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30) // what the runtime read from it at start
	limit, source = setMemoryLimit(c, 64<<20, 64<<20, 32<<20)
	assert.Equal(t, int64(1<<30), limit, "the operator's setting wins")
	assert.Equal(t, "GOMEMLIMIT", source)
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1), "left as it was")
}

func TestGCPercentFollowsTheFlagUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	percent, source := setGCPercent(400)
	assert.Equal(t, 400, percent)
	assert.Equal(t, "--gc-percent", source)
	assert.Equal(t, 400, debug.SetGCPercent(100), "applied")

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime read from it at start
	percent, source = setGCPercent(400)
	assert.Equal(t, 150, percent, "the operator's setting wins")
	assert.Equal(t, "GOGC", source)
	assert.Equal(t, 150, debug.SetGCPercent(100), "left as it was")
}
