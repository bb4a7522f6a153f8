// Package metrics defines lookahead's Prometheus collectors, all prefixed
// lookahead_, registered on a caller-supplied registry.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "lookahead"

// Reasons an object is fetched from the origin.
const (
	ReasonDemand   = "demand"
	ReasonPrefetch = "prefetch"
)

// Cache tiers.
const (
	TierMain     = "main"
	TierPrefetch = "prefetch"
)

// Set holds every collector of one sidecar. Labels have bounded cardinality:
// methods, codes, tiers and reasons, never an object id.
type Set struct {
	Requests        *prometheus.CounterVec   // method, code
	RequestDuration *prometheus.HistogramVec // method

	Hits      *prometheus.CounterVec // tier
	Misses    prometheus.Counter
	Negative  prometheus.Counter     // answered NOT_FOUND from a negative entry
	Joined    prometheus.Counter     // demands that waited for an in-flight fetch
	Evictions *prometheus.CounterVec // tier
	// SetsDropped counts main-tier writes that ristretto's buffer dropped;
	// SetsRejected those its admission policy refused.
	SetsDropped  prometheus.Counter
	SetsRejected prometheus.Counter

	OriginRoundTrips *prometheus.CounterVec   // rpc, code
	OriginDuration   *prometheus.HistogramVec // rpc
	OriginInFlight   *prometheus.GaugeVec     // rpc: round trips under way
	ObjectsFetched   *prometheus.CounterVec   // reason
	BytesFetched     *prometheus.CounterVec   // reason

	PrefetchIssued      prometheus.Counter // objects fetched speculatively
	PrefetchUsed        prometheus.Counter // of those, later demanded
	PrefetchWasted      prometheus.Counter // evicted or invalidated unused
	PrefetchWastedBytes prometheus.Counter
	PrefetchLate        prometheus.Counter // demanded while still in flight
	PrefetchDropped     prometheus.Counter // jobs dropped from a full queue, oldest first
	PrefetchClamped     prometheus.Counter // jobs stopped by the prefetch tier's cap rather than their own budget
	PrefetchDepth       prometheus.Gauge   // current configured or learned depth

	// Coherence.
	StaleFills      prometheus.Counter     // fills refused: older than a change the origin announced
	StaleServed     *prometheus.CounterVec // reason: revalidate, error
	WatchConnected  prometheus.Gauge       // origins whose change stream is up (0 or 1 with one origin)
	WatchChanges    prometheus.Counter     // changes applied from the stream
	WatchReconnects prometheus.Counter     // times the stream was re-established
	// OriginDatasetChanges counts the times an origin reported another
	// dataset identity than before, each of which flushed the cache; label
	// origin is the route name ("default" for a single origin).
	OriginDatasetChanges *prometheus.CounterVec

	// Per origin route (see routes.go).
	OriginRouteRoundTrips   *prometheus.CounterVec // origin, rpc, code
	OriginRouteBreakerState *prometheus.GaugeVec   // origin
	WatchRouteConnected     *prometheus.GaugeVec   // origin

	// Origin resilience (see resilience.go).
	OriginRetries           *prometheus.CounterVec // rpc
	OriginBreakerState      prometheus.Gauge       // 0 closed, 1 open, 2 half-open
	OriginBreakerRejections *prometheus.CounterVec // rpc
	OriginMalformed         *prometheus.CounterVec // problem (Malformed* constants)
}

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer) *Set {
	s := &Set{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_total",
			Help: "Sidecar requests by gRPC method and status code.",
		}, []string{"method", "code"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "request_duration_seconds",
			Help:    "Sidecar request latency by gRPC method.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}, []string{"method"}),
		Hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_hits_total",
			Help: "Objects answered from the cache, by tier.",
		}, []string{"tier"}),
		Misses: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_misses_total",
			Help: "Objects not in the cache when requested.",
		}),
		Negative: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_negative_hits_total",
			Help: "Requests answered NOT_FOUND from a remembered absence.",
		}),
		Joined: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "inflight_joins_total",
			Help: "Demanded objects that waited for a fetch already in flight.",
		}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_evictions_total",
			Help: "Objects evicted for room, by tier.",
		}, []string{"tier"}),
		SetsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_sets_dropped_total",
			Help: "Main-tier writes dropped by ristretto's full set buffer (kept in the prefetch tier instead).",
		}),
		SetsRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_sets_rejected_total",
			Help: "Main-tier writes refused by ristretto's admission policy.",
		}),
		OriginRoundTrips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "origin_round_trips_total",
			Help: "Requests to the origin by rpc and status code.",
		}, []string{"rpc", "code"}),
		OriginInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "origin_in_flight",
			Help: "Requests to the origin under way, by rpc (an Expand until its stream ends).",
		}, []string{"rpc"}),
		OriginDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "origin_round_trip_duration_seconds",
			Help:    "Origin round-trip time by rpc.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"rpc"}),
		ObjectsFetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "origin_objects_fetched_total",
			Help: "Objects received from the origin, by reason (demand, prefetch).",
		}, []string{"reason"}),
		BytesFetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "origin_fetched_bytes_total",
			Help: "Object bytes received from the origin, by reason (demand, prefetch).",
		}, []string{"reason"}),
		PrefetchIssued: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_issued_total",
			Help: "Objects fetched speculatively into the prefetch tier.",
		}),
		PrefetchUsed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_used_total",
			Help: "Prefetched objects that were later requested.",
		}),
		PrefetchWasted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_wasted_total",
			Help: "Prefetched objects evicted or invalidated before any request.",
		}),
		PrefetchWastedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_wasted_bytes_total",
			Help: "Bytes of prefetched objects evicted or invalidated before any request.",
		}),
		PrefetchLate: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_late_total",
			Help: "Requests that arrived while their object's prefetch was still in flight.",
		}),
		PrefetchDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_dropped_total",
			Help: "Prefetch jobs dropped from a full prefetch queue, oldest first.",
		}),
		PrefetchClamped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "prefetch_clamped_total",
			Help: "Prefetch jobs that stopped at what half the prefetch tier holds, before their own budget.",
		}),
		PrefetchDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "prefetch_depth",
			Help: "Reference levels currently prefetched below a demanded object.",
		}),
		StaleFills: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_stale_fills_total",
			Help: "Fetched copies not cached because the origin had announced a newer version or a deletion.",
		}),
		StaleServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "stale_served_total",
			Help: "Objects answered stale, by reason: revalidate (stale-while-revalidate) or error (stale-if-error).",
		}, []string{"reason"}),
		WatchConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "watch_connected",
			Help: "Origin change streams established: 1 while the origin's is, else 0 (with several origins, how many are up).",
		}),
		WatchChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "watch_changes_total",
			Help: "Changes received from the origin's change stream and applied to the cache.",
		}),
		WatchReconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "watch_reconnects_total",
			Help: "Times the origin's change stream was re-established after a break.",
		}),
	}
	s.OriginDatasetChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "origin_dataset_changes_total",
		Help: "Times an origin reported another dataset identity than before (a new store on the same address); each flushed the cache and reset the change stream's position. By origin route.",
	}, []string{"origin"})
	reg.MustRegister(s.StaleFills, s.StaleServed, s.WatchConnected, s.WatchChanges, s.WatchReconnects, s.OriginDatasetChanges)
	reg.MustRegister(s.Requests, s.RequestDuration, s.Hits, s.Misses, s.Negative, s.Joined,
		s.Evictions, s.SetsDropped, s.SetsRejected, s.OriginRoundTrips, s.OriginInFlight, s.OriginDuration,
		s.ObjectsFetched, s.BytesFetched, s.PrefetchIssued, s.PrefetchUsed, s.PrefetchWasted,
		s.PrefetchWastedBytes, s.PrefetchLate, s.PrefetchDropped, s.PrefetchClamped, s.PrefetchDepth)
	s.newResilience(reg)
	s.newRoutes(reg)
	return s
}

// TierStats is a snapshot of one cache tier, read at scrape time.
type TierStats struct {
	Bytes   int64
	Objects int64
}

// tierCollector exports the cache's current size by asking it at scrape
// time, so the cache keeps no gauges of its own in step.
type tierCollector struct {
	bytes, objects *prometheus.Desc
	stats          func() map[string]TierStats
}

// RegisterCacheSize exports lookahead_cache_bytes and lookahead_cache_objects
// by tier, read from stats at every scrape.
func RegisterCacheSize(reg prometheus.Registerer, stats func() map[string]TierStats) {
	reg.MustRegister(&tierCollector{
		bytes: prometheus.NewDesc(namespace+"_cache_bytes",
			"Bytes of objects held in the cache, by tier.", []string{"tier"}, nil),
		objects: prometheus.NewDesc(namespace+"_cache_objects",
			"Objects held in the cache, by tier.", []string{"tier"}, nil),
		stats: stats,
	})
}

func (c *tierCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.objects
}

func (c *tierCollector) Collect(ch chan<- prometheus.Metric) {
	for tier, s := range c.stats() {
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(s.Bytes), tier)
		ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(s.Objects), tier)
	}
}
