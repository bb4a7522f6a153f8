// Package wire connects the core packages' small metrics interfaces to the
// sidecar's Prometheus collectors, so that none of them imports the set.
package wire

import (
	"time"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/coherence"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// CacheMetrics returns the cache's counters from s.
func Cache(s *metrics.Set) cache.Metrics {
	return cache.Metrics{
		HitsMain: s.Hits.WithLabelValues(metrics.TierMain), HitsPrefetch: s.Hits.WithLabelValues(metrics.TierPrefetch),
		Misses: s.Misses, NegativeHits: s.Negative,
		EvictionsMain: s.Evictions.WithLabelValues(metrics.TierMain), EvictionsPrefetch: s.Evictions.WithLabelValues(metrics.TierPrefetch),
		SetsDropped: s.SetsDropped, SetsRejected: s.SetsRejected,
		PrefetchUsed: s.PrefetchUsed, PrefetchWasted: s.PrefetchWasted, PrefetchWastedBytes: s.PrefetchWastedBytes,
		StaleFills: s.StaleFills,
	}
}

// CacheSizes adapts a cache's Stats to RegisterCacheSize.
func CacheSizes(stats func() map[string]cache.TierStats) func() map[string]metrics.TierStats {
	return func() map[string]metrics.TierStats {
		out := make(map[string]metrics.TierStats, 2)
		for tier, s := range stats() {
			out[tier] = metrics.TierStats{Bytes: s.Bytes, Objects: s.Objects}
		}
		return out
	}
}

// Fetch reports the demand path's counts (fetch.Metrics) to s.
func Fetch(s *metrics.Set) FetchMetrics { return FetchMetrics{s} }

// FetchMetrics adapts a Set to the fetcher's small Metrics interface, so the
// fetcher does not import this package.
type FetchMetrics struct{ s *metrics.Set }

// Fetched counts objects and bytes filled from the origin, by reason.
func (a FetchMetrics) Fetched(speculative bool, objects int, bytes int64) {
	reason := metrics.ReasonDemand
	if speculative {
		reason = metrics.ReasonPrefetch
		a.s.PrefetchIssued.Add(float64(objects))
	}
	a.s.ObjectsFetched.WithLabelValues(reason).Add(float64(objects))
	a.s.BytesFetched.WithLabelValues(reason).Add(float64(bytes))
}

// Joined counts demanded ids that waited for a fetch in flight; late: the
// fetch was a prefetch that had not landed yet.
func (a FetchMetrics) Joined(ids int, late bool) {
	a.s.Joined.Add(float64(ids))
	if late {
		a.s.PrefetchLate.Add(float64(ids))
	}
}

// StaleServed counts stale answers by reason.
func (a FetchMetrics) StaleServed(reason string, ids int) {
	a.s.StaleServed.WithLabelValues(reason).Add(float64(ids))
}

// Dropped counts Expand objects beyond what their walk scheduled.
func (a FetchMetrics) Dropped(objects int) {
	a.s.OriginMalformed.WithLabelValues(metrics.MalformedBeyondBudget).Add(float64(objects))
}

// Prefetch reports the speculation scheduler's counts (prefetch.Metrics)
// to s.
func Prefetch(s *metrics.Set) PrefetchMetrics { return PrefetchMetrics{s} }

// PrefetchMetrics adapts a Set to the scheduler's small Metrics interface.
type PrefetchMetrics struct{ s *metrics.Set }

// Dropped counts a speculative job dropped from a full queue.
func (a PrefetchMetrics) Dropped() { a.s.PrefetchDropped.Inc() }

// Unlearned counts a read the learner never saw: its request ended while
// waiting for room in the learner's queue.
func (a PrefetchMetrics) Unlearned() { a.s.PrefetchUnlearned.Inc() }

// Clamped counts a job stopped by the prefetch tier's cap.
func (a PrefetchMetrics) Clamped() { a.s.PrefetchClamped.Inc() }

// Depth sets the current prefetch depth.
func (a PrefetchMetrics) Depth(d int) { a.s.PrefetchDepth.Set(float64(d)) }

// Window sets how many speculative origin calls may be in flight.
func (a PrefetchMetrics) Window(n int) { a.s.PrefetchWindow.Set(float64(n)) }

// RoundTrip sets the demand round trip speculation plans ahead with.
func (a PrefetchMetrics) RoundTrip(d time.Duration) { a.s.PrefetchRoundTrip.Set(d.Seconds()) }

// Learning adds the time the learner spent on one read.
func (a PrefetchMetrics) Learning(d time.Duration) {
	a.s.PrefetchPlanning.WithLabelValues(metrics.StageLearn).Add(d.Seconds())
}

// Choosing adds the time a speculative job spent choosing, off the origin.
func (a PrefetchMetrics) Choosing(d time.Duration) {
	a.s.PrefetchPlanning.WithLabelValues(metrics.StageChoose).Add(d.Seconds())
}

// Shed counts a speculative origin call the origin shed.
func (a PrefetchMetrics) Shed() { a.s.PrefetchShed.Inc() }

// Preempted counts a queued job a demand miss overtook.
func (a PrefetchMetrics) Preempted() { a.s.PrefetchPreempted.Inc() }

// Cancelled counts a running job a demand miss overtook.
func (a PrefetchMetrics) Cancelled() {
	a.s.PrefetchCancelled.WithLabelValues(metrics.CancelledOvertaken).Inc()
}

// ClientGone counts a queued or running job of a client that went.
func (a PrefetchMetrics) ClientGone() {
	a.s.PrefetchCancelled.WithLabelValues(metrics.CancelledClientGone).Inc()
}

// Coherence returns a Watch stream's collectors for route from s.
func Coherence(s *metrics.Set, route string) coherence.Metrics {
	return coherence.Metrics{
		Connected: s.WatchConnected, RouteConnected: s.WatchRouteConnected.WithLabelValues(route),
		Reconnects: s.WatchReconnects, Changes: s.WatchChanges,
		MalformedRevision: s.OriginMalformed.WithLabelValues(metrics.MalformedRevision),
	}
}
