package cache

// Counter is a Prometheus counter, as far as the cache uses one.
type Counter interface {
	Inc()
	Add(float64)
}

// Metrics are the cache's counters, filled by the command (metrics.Set's
// CacheMetrics); a nil one counts nothing.
type Metrics struct {
	HitsMain, HitsPrefetch           Counter // objects answered, by tier
	Misses                           Counter // objects not cached when asked for
	NegativeHits                     Counter // answered from a remembered absence
	EvictionsMain, EvictionsPrefetch Counter // evicted for room, by tier
	SetsDropped                      Counter // main-tier Sets ristretto's buffer dropped
	SetsRejected                     Counter // main-tier Sets its admission refused
	PrefetchUsed                     Counter // prefetched objects demanded (first use)
	PrefetchWasted                   Counter // prefetched objects that left unused
	PrefetchWastedBytes              Counter
	StaleFills                       Counter // fills refused by a version floor or a later change
}

type nopCounter struct{}

func (nopCounter) Inc()        {}
func (nopCounter) Add(float64) {}

// withNops returns m with every nil counter replaced by one that counts
// nothing.
func (m Metrics) withNops() Metrics {
	for _, c := range []*Counter{&m.HitsMain, &m.HitsPrefetch, &m.Misses, &m.NegativeHits,
		&m.EvictionsMain, &m.EvictionsPrefetch, &m.SetsDropped, &m.SetsRejected,
		&m.PrefetchUsed, &m.PrefetchWasted, &m.PrefetchWastedBytes, &m.StaleFills} {
		if *c == nil {
			*c = nopCounter{}
		}
	}
	return m
}
