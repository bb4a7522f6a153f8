package metrics

// FetchMetrics reports the demand path's counts (fetch.Metrics) to s.
func (s *Set) FetchMetrics() FetchMetrics { return FetchMetrics{s} }

// FetchMetrics adapts a Set to the fetcher's small Metrics interface, so the
// fetcher does not import this package.
type FetchMetrics struct{ s *Set }

// Fetched counts objects and bytes filled from the origin, by reason.
func (a FetchMetrics) Fetched(speculative bool, objects int, bytes int64) {
	reason := ReasonDemand
	if speculative {
		reason = ReasonPrefetch
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
	a.s.OriginMalformed.WithLabelValues(MalformedBeyondBudget).Add(float64(objects))
}

// PrefetchMetrics reports the speculation scheduler's counts
// (prefetch.Metrics) to s.
func (s *Set) PrefetchMetrics() PrefetchMetrics { return PrefetchMetrics{s} }

// PrefetchMetrics adapts a Set to the scheduler's small Metrics interface.
type PrefetchMetrics struct{ s *Set }

// Dropped counts a speculative job dropped from a full queue.
func (a PrefetchMetrics) Dropped() { a.s.PrefetchDropped.Inc() }

// Clamped counts a job stopped by the prefetch tier's cap.
func (a PrefetchMetrics) Clamped() { a.s.PrefetchClamped.Inc() }

// Depth sets the current prefetch depth.
func (a PrefetchMetrics) Depth(d int) { a.s.PrefetchDepth.Set(float64(d)) }
