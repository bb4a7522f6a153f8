package cache

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Ristretto starts two goroutines per cache; Close must stop them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is Config.Now under the test's control.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testMetrics are the cache's counters, each a Prometheus counter the
// tests read back.
type testMetrics struct {
	Hits, Evictions                                           *prometheus.CounterVec // tier
	Misses, Negative, SetsDropped, SetsRejected, PrefetchUsed prometheus.Counter
	PrefetchWasted, PrefetchWastedBytes, StaleFills           prometheus.Counter
}

func newTestMetrics() *testMetrics {
	c := func(name string) prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: name}) }
	v := func(name string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{"tier"})
	}
	return &testMetrics{Hits: v("hits"), Evictions: v("evictions"), Misses: c("misses"), Negative: c("negative"),
		SetsDropped: c("dropped"), SetsRejected: c("rejected"), PrefetchUsed: c("used"),
		PrefetchWasted: c("wasted"), PrefetchWastedBytes: c("wasted_bytes"), StaleFills: c("stale_fills")}
}

func (m *testMetrics) metrics() Metrics {
	return Metrics{HitsMain: m.Hits.WithLabelValues("main"), HitsPrefetch: m.Hits.WithLabelValues("prefetch"),
		Misses: m.Misses, NegativeHits: m.Negative,
		EvictionsMain: m.Evictions.WithLabelValues("main"), EvictionsPrefetch: m.Evictions.WithLabelValues("prefetch"),
		SetsDropped: m.SetsDropped, SetsRejected: m.SetsRejected, PrefetchUsed: m.PrefetchUsed,
		PrefetchWasted: m.PrefetchWasted, PrefetchWastedBytes: m.PrefetchWastedBytes, StaleFills: m.StaleFills}
}

// harness is a Cache with its own counters and clock.
type harness struct {
	*Cache
	m     *testMetrics
	clock *fakeClock
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.MainBytes == 0 {
		cfg.MainBytes = 4 << 20 // the default's counters are slow to allocate under -race
	}
	m := newTestMetrics()
	c, err := New(cfg, m.metrics())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &harness{Cache: c, m: m, clock: clock}
}

// settle makes every accepted main-tier Set visible and finishes pending
// promotions, as the next write would.
func (h *harness) settle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settleLocked()
}

// tierOf says which tier holds id, without counting or promoting.
func (h *harness) tierOf(id string) Tier {
	if h.main.has(id) {
		return TierMain
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pre.get(id) != nil {
		return TierPrefetch
	}
	return 0
}

// mainContents is what ristretto really stores, to check the accounting.
func (h *harness) mainContents() TierStats {
	var s TierStats
	h.main.rc.IterValues(func(e *entry) bool {
		s.Bytes += e.cost
		s.Objects++
		return false
	})
	return s
}

func (h *harness) hits(tier string) float64 {
	return testutil.ToFloat64(h.m.Hits.WithLabelValues(tier))
}

func (h *harness) evictions(tier string) float64 {
	return testutil.ToFloat64(h.m.Evictions.WithLabelValues(tier))
}

func val(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// sized returns an object whose Size is exactly size bytes.
func sized(id string, version uint64, size int) *graph.Object {
	o := &graph.Object{ID: id, Version: version}
	o.Payload = make([]byte, size-int(o.Size()))
	return o
}

func stats(mainBytes, mainObjects, preBytes, preObjects int64) map[string]TierStats {
	return map[string]TierStats{
		"main":     {Bytes: mainBytes, Objects: mainObjects},
		"prefetch": {Bytes: preBytes, Objects: preObjects},
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []error
	}{
		{name: "zero config is valid", cfg: Config{}},
		{name: "negative NegativeTTL disables, is valid", cfg: Config{NegativeTTL: -1}},
		{name: "negative main bytes", cfg: Config{MainBytes: -1}, want: []error{errMainBytes}},
		{name: "negative prefetch bytes", cfg: Config{PrefetchBytes: -1}, want: []error{errPrefetchBytes}},
		{name: "negative ttl", cfg: Config{TTL: -time.Second}, want: []error{errTTL}},
		{name: "negative entries", cfg: Config{NegativeEntries: -1}, want: []error{errNegativeEntries}},
		{
			name: "every broken rule is reported",
			cfg:  Config{MainBytes: -1, PrefetchBytes: -1, TTL: -1, NegativeEntries: -1},
			want: []error{errMainBytes, errPrefetchBytes, errTTL, errNegativeEntries},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if len(tc.want) == 0 {
				require.NoError(t, err)
				c, err := New(tc.cfg, Metrics{})
				require.NoError(t, err)
				c.Close()
				return
			}
			for _, w := range tc.want {
				assert.ErrorIs(t, err, w)
			}
			_, err = New(tc.cfg, Metrics{})
			assert.ErrorIs(t, err, tc.want[0], "New validates")
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	assert.EqualValues(t, 256<<20, c.MainBytes)
	assert.EqualValues(t, 64<<20, c.PrefetchBytes)
	assert.Equal(t, 5*time.Second, c.NegativeTTL)
	assert.Equal(t, 16<<10, c.NegativeEntries)
	assert.Zero(t, c.TTL)
	require.NotNil(t, c.Now)

	kept := Config{MainBytes: 1, PrefetchBytes: 2, NegativeTTL: -1, NegativeEntries: 3, TTL: time.Hour}
	assert.Equal(t, kept.MainBytes, kept.withDefaults().MainBytes)
	assert.Equal(t, kept.NegativeTTL, kept.withDefaults().NegativeTTL, "negative stays: disabled")
}

func TestNumCounters(t *testing.T) {
	cases := []struct {
		name      string
		mainBytes int64
		want      int64
	}{
		{name: "floor for tiny budgets", mainBytes: 1, want: minCounters},
		{name: "floor boundary", mainBytes: 400 << 10, want: minCounters},
		{name: "ten per KiB", mainBytes: 1 << 20, want: 10 << 10},
		{name: "default budget", mainBytes: DefaultMainBytes, want: 10 * 256 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, numCounters(tc.mainBytes))
		})
	}
}

func TestTierString(t *testing.T) {
	assert.Equal(t, "main", TierMain.String())
	assert.Equal(t, "prefetch", TierPrefetch.String())
	assert.Equal(t, "none", Tier(0).String())
}

func TestGetPromotesOnFirstHit(t *testing.T) {
	h := newHarness(t, Config{})
	a := sized("a", 1, 200)
	h.AddPrefetched(a)
	assert.Equal(t, stats(0, 0, 200, 1), h.Stats())

	l, ok := h.Get("a")
	require.True(t, ok)
	assert.Equal(t, Lookup{Object: a, Tier: TierPrefetch}, l)
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed))
	assert.Equal(t, 1.0, h.hits("prefetch"))

	// Before ristretto has applied the move either tier may answer; the
	// object is found and its use is not counted twice.
	l, ok = h.Get("a")
	require.True(t, ok)
	assert.Same(t, a, l.Object)
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed))

	h.settle()
	assert.Equal(t, stats(200, 1, 0, 0), h.Stats(), "moved, not copied")
	l, ok = h.Get("a")
	require.True(t, ok)
	assert.Equal(t, Lookup{Object: a, Tier: TierMain}, l)
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed))
	assert.Zero(t, val(h.m.PrefetchWasted))
	assert.Zero(t, val(h.m.Misses))
}

func TestPromotionPendingOrRefused(t *testing.T) {
	h := newHarness(t, Config{})
	// Every Set is accepted but never applied: it sits in ristretto's buffer
	// until settle, where it turns out admission refused it.
	var sets []string
	h.main.set = func(id string, e *entry, _ time.Duration) bool {
		sets = append(sets, id)
		h.main.uncount(e) // what OnReject's OnExit does
		return true
	}
	a := sized("a", 1, 200)
	h.AddPrefetched(a)

	for range 3 {
		l, ok := h.Get("a")
		require.True(t, ok)
		assert.Equal(t, TierPrefetch, l.Tier, "the prefetch tier answers while the move is pending")
	}
	assert.Equal(t, []string{"a"}, sets, "one promotion in flight at a time")
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed))

	h.settle()
	assert.Equal(t, TierPrefetch, h.tierOf("a"), "a refused promotion keeps the only copy")

	l, ok := h.Get("a")
	require.True(t, ok)
	assert.Equal(t, TierPrefetch, l.Tier)
	assert.Equal(t, []string{"a", "a"}, sets, "the next hit tries again")
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed), "still counted once")
	assert.Equal(t, 3.0+1, h.hits("prefetch"))
}

func TestPromote(t *testing.T) {
	h := newHarness(t, Config{})
	a := sized("a", 1, 200)
	h.AddPrefetched(a)

	assert.True(t, h.Promote("a"))
	assert.False(t, h.Promote("b"), "not in the prefetch tier")
	assert.Equal(t, 1.0, val(h.m.PrefetchUsed))
	assert.Zero(t, h.hits("prefetch"), "a promotion is not a hit")
	assert.Zero(t, val(h.m.Misses))

	h.settle()
	assert.Equal(t, TierMain, h.tierOf("a"))
	assert.False(t, h.Promote("a"), "already moved")
}

func TestPeekHasNoSideEffects(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := sized("a", 1, 200), sized("b", 1, 200)
	h.AddPrefetched(a)
	h.AddDemand(b)
	h.AddMissing("gone")

	cases := []struct {
		name      string
		id        string
		wantObj   *graph.Object
		wantKnown bool
	}{
		{name: "prefetch tier", id: "a", wantObj: a, wantKnown: true},
		{name: "main tier", id: "b", wantObj: b, wantKnown: true},
		{name: "negative entry", id: "gone", wantKnown: true},
		{name: "unknown", id: "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, known := h.Peek(tc.id)
			assert.Same(t, tc.wantObj, o)
			assert.Equal(t, tc.wantKnown, known)
		})
	}
	h.settle()
	assert.Equal(t, TierPrefetch, h.tierOf("a"), "not promoted")
	assert.Zero(t, h.hits("main"))
	assert.Zero(t, h.hits("prefetch"))
	assert.Zero(t, val(h.m.Misses))
	assert.Zero(t, val(h.m.Negative))
	assert.Zero(t, val(h.m.PrefetchUsed))
}

func TestPrefetchTierOldestFirst(t *testing.T) {
	const size = 200
	type op struct {
		add  string // AddPrefetched an object of size bytes, or
		big  int    // of this size if non-zero
		get  string // Get, with main-tier Sets dropped so the object stays
		want Tier
	}
	cases := []struct {
		name          string
		ops           []op
		wantHeld      []string
		wantEvictions float64
		wantWasted    float64
		wantStats     TierStats
	}{
		{
			name:      "fills to its budget without evicting",
			ops:       []op{{add: "a"}, {add: "b"}, {add: "c"}},
			wantHeld:  []string{"a", "b", "c"},
			wantStats: TierStats{Bytes: 3 * size, Objects: 3},
		},
		{
			name:          "evicts the oldest, unused, so wasted",
			ops:           []op{{add: "a"}, {add: "b"}, {add: "c"}, {add: "d"}},
			wantHeld:      []string{"b", "c", "d"},
			wantEvictions: 1, wantWasted: 1,
			wantStats: TierStats{Bytes: 3 * size, Objects: 3},
		},
		{
			name: "a used object is kept longer and not wasted when evicted",
			ops: []op{
				{add: "a"}, {add: "b"}, {add: "c"}, {get: "a"}, // a is now the newest
				{add: "d"}, {add: "e"}, // evict b, c
				{add: "f"}, // evicts a, used
			},
			wantHeld:      []string{"d", "e", "f"},
			wantEvictions: 3, wantWasted: 2,
			wantStats: TierStats{Bytes: 3 * size, Objects: 3},
		},
		{
			name:          "a big object evicts as many as it needs",
			ops:           []op{{add: "a"}, {add: "b"}, {add: "c"}, {add: "big", big: 2 * size}},
			wantHeld:      []string{"c", "big"},
			wantEvictions: 2, wantWasted: 2,
			wantStats: TierStats{Bytes: 3 * size, Objects: 2},
		},
		{
			name:      "an object larger than the tier is not kept",
			ops:       []op{{add: "a"}, {add: "huge", big: 3*size + 1}},
			wantHeld:  []string{"a"},
			wantStats: TierStats{Bytes: size, Objects: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{PrefetchBytes: 3 * size})
			h.main.set = func(string, *entry, time.Duration) bool { return false }
			for _, o := range tc.ops {
				switch {
				case o.add != "" && o.big > 0:
					h.AddPrefetched(sized(o.add, 1, o.big))
				case o.add != "":
					h.AddPrefetched(sized(o.add, 1, size))
				case o.get != "":
					_, ok := h.Get(o.get)
					require.True(t, ok)
				}
			}
			var held []string
			for _, id := range []string{"a", "b", "c", "d", "e", "f", "big", "huge"} {
				if h.tierOf(id) == TierPrefetch {
					held = append(held, id)
				}
			}
			assert.Equal(t, tc.wantHeld, held)
			assert.Equal(t, tc.wantEvictions, h.evictions("prefetch"))
			assert.Equal(t, tc.wantWasted, val(h.m.PrefetchWasted))
			assert.Equal(t, tc.wantWasted*size, val(h.m.PrefetchWastedBytes))
			assert.Equal(t, tc.wantStats, h.Stats()["prefetch"])
			assert.Zero(t, h.evictions("main"))
		})
	}
}

func TestSpeculationNeverEvictsDemanded(t *testing.T) {
	h := newHarness(t, Config{MainBytes: 1 << 20, PrefetchBytes: 4 << 10})
	var demanded []*graph.Object
	for i := range 100 {
		demanded = append(demanded, sized("d"+strconv.Itoa(i), 1, 200))
	}
	h.AddDemand(demanded...)
	require.Equal(t, stats(100*200, 100, 0, 0), h.Stats())

	for batch := range 200 {
		var objs []*graph.Object
		for i := range 50 {
			objs = append(objs, sized(fmt.Sprintf("p%d-%d", batch, i), 1, 200))
		}
		h.AddPrefetched(objs...)
	}

	for _, o := range demanded {
		l, ok := h.Get(o.ID)
		require.True(t, ok, o.ID)
		assert.Equal(t, TierMain, l.Tier, o.ID)
	}
	s := h.Stats()
	assert.Equal(t, TierStats{Bytes: 100 * 200, Objects: 100}, s["main"])
	assert.LessOrEqual(t, s["prefetch"].Bytes, int64(4<<10))
	assert.Zero(t, h.evictions("main"))
	assert.Equal(t, 200*50-float64(s["prefetch"].Objects), h.evictions("prefetch"))
	assert.Equal(t, h.evictions("prefetch"), val(h.m.PrefetchWasted))
}

func TestDroppedSetsKeptInPrefetchTier(t *testing.T) {
	h := newHarness(t, Config{PrefetchBytes: 400})
	drop := map[string]bool{"b": true}
	set := h.main.set
	h.main.set = func(id string, e *entry, ttl time.Duration) bool {
		if drop[id] {
			return false
		}
		return set(id, e, ttl)
	}
	a, b, c := sized("a", 1, 200), sized("b", 1, 200), sized("c", 1, 200)
	h.AddDemand(a, b, c)
	assert.Equal(t, 1.0, val(h.m.SetsDropped))
	assert.Equal(t, stats(400, 2, 200, 1), h.Stats(), "a dropped Set is not counted in the main tier")

	for _, tc := range []struct {
		o    *graph.Object
		tier Tier
	}{{a, TierMain}, {b, TierPrefetch}, {c, TierMain}} {
		l, ok := h.Get(tc.o.ID)
		require.True(t, ok, tc.o.ID)
		assert.Same(t, tc.o, l.Object)
		assert.Equal(t, tc.tier, l.Tier, tc.o.ID)
	}
	assert.Zero(t, val(h.m.PrefetchUsed), "demanded, not a used speculation")
	assert.Equal(t, 2.0, val(h.m.SetsDropped), "b's promotion on that Get was dropped too")

	t.Run("evicted without waste", func(t *testing.T) {
		h.AddPrefetched(sized("x", 1, 200), sized("y", 1, 200)) // evicts b
		assert.Equal(t, Tier(0), h.tierOf("b"))
		assert.Equal(t, 1.0, h.evictions("prefetch"))
		assert.Zero(t, val(h.m.PrefetchWasted))
	})

	t.Run("moves to main once Sets land again", func(t *testing.T) {
		h.AddDemand(b) // dropped again, so held in the prefetch tier
		assert.Equal(t, 3.0, val(h.m.SetsDropped))
		delete(drop, "b")
		l, ok := h.Get("b")
		require.True(t, ok)
		assert.Equal(t, TierPrefetch, l.Tier)
		h.settle()
		assert.Equal(t, TierMain, h.tierOf("b"))
		assert.Zero(t, val(h.m.PrefetchUsed))
		assert.Equal(t, 600, int(h.Stats()["main"].Bytes))
	})
}

func TestBurstLosesNothing(t *testing.T) {
	// One batch larger than ristretto's 32 Ki-entry set buffer: some Sets are
	// usually dropped (how many depends on scheduling). Whatever the count,
	// every object must be served, each drop must be counted, and each
	// dropped object must be in the prefetch tier.
	const n = 50_000
	h := newHarness(t, Config{MainBytes: 64 << 20, PrefetchBytes: 64 << 20})
	objs := make([]*graph.Object, n)
	for i := range objs {
		objs[i] = sized("burst-"+strconv.Itoa(i), 1, 200)
	}
	h.AddDemand(objs...)

	s := h.Stats()
	t.Logf("dropped %v of %d Sets", val(h.m.SetsDropped), n)
	assert.Zero(t, val(h.m.SetsRejected))
	assert.Equal(t, val(h.m.SetsDropped), float64(s["prefetch"].Objects))
	assert.EqualValues(t, n, s["main"].Objects+s["prefetch"].Objects)
	assert.Equal(t, h.mainContents(), s["main"])
	for _, o := range objs {
		got, known := h.Peek(o.ID)
		require.True(t, known, o.ID)
		require.Same(t, o, got)
	}
}

func TestVersions(t *testing.T) {
	x := func(v uint64, tag string) *graph.Object {
		return &graph.Object{ID: "x", Version: v, Payload: []byte(tag)}
	}
	type step struct {
		demand bool
		objs   []*graph.Object
	}
	d := func(objs ...*graph.Object) step { return step{demand: true, objs: objs} }
	p := func(objs ...*graph.Object) step { return step{objs: objs} }
	v1, v2, v3 := x(1, "v1"), x(2, "v2"), x(3, "v3")
	u1, u2 := x(0, "unknown-1"), x(0, "unknown-2")
	cases := []struct {
		name       string
		steps      []step
		want       *graph.Object
		wantTier   Tier
		wantWasted float64
	}{
		{name: "demand: newer replaces older", steps: []step{d(v1), d(v2)}, want: v2, wantTier: TierMain},
		{name: "demand: older never replaces newer", steps: []step{d(v2), d(v1)}, want: v2, wantTier: TierMain},
		{name: "prefetch: newer replaces older, older was wasted", steps: []step{p(v1), p(v2)}, want: v2, wantTier: TierPrefetch, wantWasted: 1},
		{name: "prefetch: older never replaces newer", steps: []step{p(v2), p(v1)}, want: v2, wantTier: TierPrefetch},
		{name: "prefetch: same version is not added again", steps: []step{p(v2), p(x(2, "again"))}, want: v2, wantTier: TierPrefetch},
		{name: "prefetch of what main holds is skipped", steps: []step{d(v2), p(x(2, "again"))}, want: v2, wantTier: TierMain},
		{name: "prefetch of an older version than main's is skipped", steps: []step{d(v2), p(v1)}, want: v2, wantTier: TierMain},
		{name: "prefetch of a newer version drops main's", steps: []step{d(v1), p(v2)}, want: v2, wantTier: TierPrefetch},
		{name: "demand of an older version than prefetched is ignored", steps: []step{p(v2), d(v1)}, want: v2, wantTier: TierPrefetch},
		{name: "demand of a newer version than prefetched moves to main", steps: []step{p(v1), d(v2)}, want: v2, wantTier: TierMain},
		{name: "demand of the prefetched version moves to main", steps: []step{p(v2), d(x(2, "demanded"))}, want: x(2, "demanded"), wantTier: TierMain},
		{name: "unknown never replaces known", steps: []step{d(v3), d(u1)}, want: v3, wantTier: TierMain},
		{name: "known replaces unknown", steps: []step{d(u1), d(v1)}, want: v1, wantTier: TierMain},
		{name: "unknown replaces unknown: newest write wins", steps: []step{d(u1), d(u2)}, want: u2, wantTier: TierMain},
		{name: "prefetch: unknown replaces unknown", steps: []step{p(u1), p(u2)}, want: u2, wantTier: TierPrefetch, wantWasted: 1},
		{name: "prefetch of unknown never displaces main's unknown", steps: []step{d(u1), p(u2)}, want: u1, wantTier: TierMain},
		{name: "one batch keeps its newest copy", steps: []step{d(v2, v3, v1)}, want: v3, wantTier: TierMain},
		{name: "one prefetch batch keeps its newest copy", steps: []step{p(v1, v3, v2)}, want: v3, wantTier: TierPrefetch},
		{name: "one batch of unknowns keeps the last", steps: []step{d(u1, u2)}, want: u2, wantTier: TierMain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			for _, s := range tc.steps {
				if s.demand {
					h.AddDemand(s.objs...)
				} else {
					h.AddPrefetched(s.objs...)
				}
			}
			h.settle()
			got, known := h.Peek("x")
			require.True(t, known)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantTier, h.tierOf("x"))
			st := h.Stats()
			assert.EqualValues(t, 1, st["main"].Objects+st["prefetch"].Objects, "one copy")
			assert.Equal(t, tc.wantWasted, val(h.m.PrefetchWasted))
		})
	}
}

func TestVersionsWhilePromotionPending(t *testing.T) {
	// A hit's promotion Set may still be buffered when a newer version is
	// demanded; ristretto would admit the first Set and reject the second.
	// The write must wait for it and replace it.
	h := newHarness(t, Config{})
	h.AddPrefetched(&graph.Object{ID: "x", Version: 1})
	_, ok := h.Get("x") // promotes v1, without waiting
	require.True(t, ok)
	v2 := &graph.Object{ID: "x", Version: 2}
	h.AddDemand(v2)
	for range 3 {
		l, ok := h.Get("x")
		require.True(t, ok)
		assert.Same(t, v2, l.Object)
		assert.Equal(t, TierMain, l.Tier)
	}
	assert.Equal(t, stats(v2.Size(), 1, 0, 0), h.Stats())
}

func TestNegativeEntries(t *testing.T) {
	t.Run("remembered for NegativeTTL", func(t *testing.T) {
		h := newHarness(t, Config{NegativeTTL: time.Second})
		h.AddMissing("x")
		l, ok := h.Get("x")
		require.True(t, ok)
		assert.Equal(t, Lookup{Negative: true}, l)
		assert.Equal(t, 1.0, val(h.m.Negative))
		assert.Zero(t, val(h.m.Misses))

		h.clock.Advance(time.Second - 1)
		_, ok = h.Get("x")
		assert.True(t, ok)

		h.clock.Advance(1)
		_, ok = h.Get("x")
		assert.False(t, ok, "expired")
		assert.Equal(t, 1.0, val(h.m.Misses))
		_, known := h.Peek("x")
		assert.False(t, known)
	})
	t.Run("default NegativeTTL is 5s", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.AddMissing("x")
		h.clock.Advance(5*time.Second - 1)
		_, known := h.Peek("x")
		assert.True(t, known)
		h.clock.Advance(1)
		_, known = h.Peek("x")
		assert.False(t, known)
	})
	t.Run("replaced by a demanded object", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.AddMissing("x")
		o := sized("x", 1, 200)
		h.AddDemand(o)
		l, ok := h.Get("x")
		require.True(t, ok)
		assert.Equal(t, Lookup{Object: o, Tier: TierMain}, l)
	})
	t.Run("replaced by a prefetched object", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.AddMissing("x")
		o := sized("x", 1, 200)
		h.AddPrefetched(o)
		l, ok := h.Get("x")
		require.True(t, ok)
		assert.Equal(t, Lookup{Object: o, Tier: TierPrefetch}, l)
	})
	t.Run("drops cached copies", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.AddDemand(sized("x", 1, 200))
		h.AddPrefetched(sized("y", 1, 200))
		h.AddMissing("x", "y")
		for _, id := range []string{"x", "y"} {
			l, ok := h.Get(id)
			require.True(t, ok)
			assert.True(t, l.Negative, id)
		}
		assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
		assert.Equal(t, 1.0, val(h.m.PrefetchWasted), "y was never used")
	})
	t.Run("disabled by a negative NegativeTTL", func(t *testing.T) {
		h := newHarness(t, Config{NegativeTTL: -1})
		h.AddDemand(sized("x", 1, 200))
		h.AddMissing("x")
		_, ok := h.Get("x")
		assert.False(t, ok, "the stale copy is still dropped")
	})
	t.Run("bounded, oldest forgotten first", func(t *testing.T) {
		h := newHarness(t, Config{NegativeEntries: 2})
		h.AddMissing("a", "b", "c")
		_, known := h.Peek("a")
		assert.False(t, known)
		for _, id := range []string{"b", "c"} {
			_, known := h.Peek(id)
			assert.True(t, known, id)
		}
		h.AddMissing("b") // refreshed: now the newest
		h.AddMissing("d")
		_, known = h.Peek("c")
		assert.False(t, known)
	})
	t.Run("expired ones are pruned on insert", func(t *testing.T) {
		h := newHarness(t, Config{NegativeTTL: time.Second})
		h.AddMissing("a", "b")
		h.clock.Advance(time.Second)
		h.AddMissing("c")
		h.mu.Lock()
		defer h.mu.Unlock()
		assert.Equal(t, 1, h.neg.len())
	})
}

func TestTTL(t *testing.T) {
	const ttl = time.Minute
	t.Run("main tier", func(t *testing.T) {
		h := newHarness(t, Config{TTL: ttl})
		h.AddDemand(sized("a", 1, 200))
		h.clock.Advance(ttl - 1)
		l, ok := h.Get("a")
		require.True(t, ok)
		assert.Equal(t, TierMain, l.Tier)
		h.clock.Advance(1)
		_, ok = h.Get("a")
		assert.False(t, ok)
		_, known := h.Peek("a")
		assert.False(t, known)
	})
	t.Run("prefetch tier, expired unused is wasted", func(t *testing.T) {
		h := newHarness(t, Config{TTL: ttl})
		h.AddPrefetched(sized("a", 1, 200))
		h.clock.Advance(ttl)
		_, ok := h.Get("a")
		assert.False(t, ok)
		assert.Equal(t, 1.0, val(h.m.PrefetchWasted))
		assert.Zero(t, h.evictions("prefetch"), "expiry is not eviction")
		assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
	})
	t.Run("promotion keeps the original expiry", func(t *testing.T) {
		h := newHarness(t, Config{TTL: ttl})
		h.AddPrefetched(sized("a", 1, 200))
		h.clock.Advance(ttl / 2)
		_, ok := h.Get("a")
		require.True(t, ok)
		h.settle()
		require.Equal(t, TierMain, h.tierOf("a"))
		h.clock.Advance(ttl / 2)
		_, ok = h.Get("a")
		assert.False(t, ok)
	})
	t.Run("an expired copy is replaced by the same version", func(t *testing.T) {
		h := newHarness(t, Config{TTL: ttl})
		h.AddDemand(sized("a", 1, 200))
		h.clock.Advance(ttl)
		fresh := sized("a", 1, 200)
		h.AddDemand(fresh)
		l, ok := h.Get("a")
		require.True(t, ok)
		assert.Same(t, fresh, l.Object)
		assert.Equal(t, stats(200, 1, 0, 0), h.Stats())
	})
	t.Run("expired prefetched objects are pruned on insert", func(t *testing.T) {
		h := newHarness(t, Config{TTL: ttl})
		h.AddPrefetched(sized("a", 1, 200), sized("b", 1, 200))
		h.clock.Advance(ttl)
		h.AddPrefetched(sized("c", 1, 200))
		assert.Equal(t, stats(0, 0, 200, 1), h.Stats())
		assert.Equal(t, 2.0, val(h.m.PrefetchWasted))
	})
	t.Run("no TTL keeps objects", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.AddDemand(sized("a", 1, 200))
		h.AddPrefetched(sized("b", 1, 200))
		h.clock.Advance(1000 * time.Hour)
		for _, id := range []string{"a", "b"} {
			_, ok := h.Get(id)
			assert.True(t, ok, id)
		}
	})
}

func TestInvalidate(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddDemand(sized("main", 1, 200))
	h.AddPrefetched(sized("unused", 1, 200), sized("used", 1, 200), sized("kept", 1, 200))
	h.main.set = func(string, *entry, time.Duration) bool { return false } // keep "used" in the prefetch tier
	_, ok := h.Get("used")
	require.True(t, ok)
	h.AddMissing("gone")

	n := h.Invalidate("main", "unused", "used", "gone", "never-cached", "main")
	assert.Equal(t, 3, n, "main, unused and used held objects")
	for _, id := range []string{"main", "unused", "used", "gone", "never-cached"} {
		_, known := h.Peek(id)
		assert.False(t, known, id)
	}
	assert.Equal(t, stats(0, 0, 200, 1), h.Stats(), "only kept is left")
	assert.Equal(t, 1.0, val(h.m.PrefetchWasted), "only the unused one is wasted")
	assert.Equal(t, 200.0, val(h.m.PrefetchWastedBytes))
	assert.Zero(t, h.evictions("main")+h.evictions("prefetch"), "invalidation is not eviction")
	assert.Zero(t, h.Invalidate())
}

func TestInvalidateWhilePromotionPending(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddPrefetched(sized("a", 1, 200))
	_, ok := h.Get("a") // the promotion Set may still be buffered
	require.True(t, ok)
	assert.Equal(t, 1, h.Invalidate("a"))
	h.settle()
	_, known := h.Peek("a")
	assert.False(t, known, "the buffered promotion must not resurrect it")
	assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
}

func TestStatsExactUnderEviction(t *testing.T) {
	// A main tier of 50 objects fed 600, with invalidations and promotions:
	// ristretto evicts and rejects, and the accounting must follow exactly.
	h := newHarness(t, Config{MainBytes: 50 * 200, PrefetchBytes: 10 * 200})
	for i := range 600 {
		id := "d" + strconv.Itoa(i)
		h.AddDemand(sized(id, 1, 200))
		h.Get("d" + strconv.Itoa(i/2)) // make older ids more frequent
		if i%3 == 0 {
			h.AddPrefetched(sized("p"+strconv.Itoa(i), 1, 200+i))
		}
		if i%5 == 0 {
			h.Get("p" + strconv.Itoa(i-3))
		}
		if i%7 == 0 {
			h.Invalidate("d" + strconv.Itoa(i/3))
		}
	}
	h.settle()
	s := h.Stats()
	assert.Equal(t, h.mainContents(), s["main"])
	assert.LessOrEqual(t, s["main"].Bytes, int64(50*200))
	assert.LessOrEqual(t, s["prefetch"].Bytes, int64(10*200))
	assert.Positive(t, h.evictions("main")+val(h.m.SetsRejected), "the main tier was full")
	assert.Positive(t, h.evictions("prefetch"))
	h.mu.Lock()
	order(t, h.pre)
	h.mu.Unlock()
}

func TestConcurrentUse(t *testing.T) {
	h := newHarness(t, Config{MainBytes: 100 * 200, PrefetchBytes: 30 * 200, NegativeEntries: 20})
	const goroutines, ops, ids = 8, 2000, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			id := func() string { return "o" + strconv.Itoa(rng.IntN(ids)) }
			obj := func() *graph.Object { return sized(id(), uint64(rng.IntN(4)), 150+rng.IntN(100)) }
			for i := range ops {
				switch r := rng.IntN(100); {
				case r < 45:
					if l, ok := h.Get(id()); ok && !l.Negative {
						assert.NotNil(t, l.Object)
					}
				case r < 55:
					h.Peek(id())
				case r < 67:
					h.AddDemand(obj(), obj())
				case r < 85:
					h.AddPrefetched(obj(), obj(), obj())
				case r < 90:
					h.Promote(id())
				case r < 95:
					h.AddMissing(id())
				default:
					h.Invalidate(id())
				}
				if i%250 == 0 {
					h.Stats()
				}
			}
		}()
	}
	wg.Wait()

	h.settle()
	s := h.Stats()
	assert.Equal(t, h.mainContents(), s["main"])
	assert.LessOrEqual(t, s["main"].Bytes, int64(100*200))
	h.mu.Lock()
	defer h.mu.Unlock()
	order(t, h.pre)
	order(t, h.neg)
	assert.Empty(t, h.promoting)
	for id := range h.pre.items {
		assert.False(t, h.main.has(id), "%s in both tiers after settling", id)
	}
}

func TestClose(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddDemand(sized("a", 1, 200))
	h.AddPrefetched(sized("b", 1, 200))
	h.Close()
	h.Close() // idempotent

	assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
	_, ok := h.Get("a")
	assert.False(t, ok)
	_, known := h.Peek("b")
	assert.False(t, known)
	h.AddDemand(sized("c", 1, 200))
	h.AddPrefetched(sized("d", 1, 200))
	h.AddMissing("e")
	assert.False(t, h.Promote("b"))
	assert.Zero(t, h.Invalidate("a", "b"))
	assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
	assert.Zero(t, h.evictions("main"), "shutdown is not eviction")
	assert.Zero(t, val(h.m.SetsDropped))
}

func TestCloseWhileInUse(t *testing.T) {
	// Ristretto panics if Close races with Set, Get or Wait; the cache must not.
	h := newHarness(t, Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := strconv.Itoa(g*1_000_000 + i%500)
				h.AddDemand(sized("d"+id, 1, 200))
				h.AddPrefetched(sized("p"+id, 1, 200))
				h.Get("p" + id)
				h.Get("d" + id)
				h.Peek("d" + id)
				rounds.Add(1)
			}
		}()
	}
	for rounds.Load() < 1000 {
		runtime.Gosched() // Close in the middle of the traffic
	}
	h.Close()
	close(stop)
	wg.Wait()
	assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
}

func TestNewWithoutMetrics(t *testing.T) {
	c, err := New(Config{}, Metrics{})
	require.NoError(t, err)
	defer c.Close()
	c.AddDemand(sized("a", 1, 200))
	_, ok := c.Get("a")
	assert.True(t, ok)
}

func TestNilAndEmptyInput(t *testing.T) {
	h := newHarness(t, Config{})
	h.AddDemand()
	h.AddDemand(nil, nil)
	h.AddPrefetched(nil)
	h.AddMissing()
	assert.Equal(t, stats(0, 0, 0, 0), h.Stats())
}

func TestUnreadCountsSpeculationNotYetRead(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := sized("a", 1, 200), sized("b", 1, 300)
	h.AddPrefetched(a, b)
	n, bytes := h.Unread()
	assert.Equal(t, int64(2), n)
	assert.Equal(t, int64(500), bytes)
	_, ok := h.Get("a")
	require.True(t, ok)
	n, bytes = h.Unread()
	assert.Equal(t, int64(1), n, "a was read")
	assert.Equal(t, int64(300), bytes)
	h.Invalidate("b")
	n, _ = h.Unread()
	assert.Zero(t, n)
	assert.Equal(t, 1.0, val(h.m.PrefetchWasted), "b left unread: wasted")
}
