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

// Stages of the learned planner's work, timed apart from the origin's
// (PrefetchPlanning).
const (
	StageLearn  = "learn"
	StageChoose = "choose"
)

// Cache tiers.
const (
	TierMain     = "main"
	TierPrefetch = "prefetch"
)

// Set holds every collector of one sidecar. Labels have bounded cardinality:
// methods, codes, tiers and reasons, never an object id.
type Set struct {
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
	PrefetchUnlearned   prometheus.Counter // reads not learned from: their request ended waiting for the learner's queue
	PrefetchClamped     prometheus.Counter // jobs stopped by the prefetch tier's cap rather than their own budget
	PrefetchDepth       prometheus.Gauge   // current configured or learned depth
	PrefetchWindow      prometheus.Gauge   // speculative origin calls allowed in flight (AIMD)
	PrefetchShed        prometheus.Counter // speculative origin calls the origin refused RESOURCE_EXHAUSTED
	PrefetchRoundTrip   prometheus.Gauge   // the demand round trip the learned planner plans ahead with
	PrefetchPreempted   prometheus.Counter // queued jobs a demand miss overtook, dropped
	// PrefetchCancelled counts jobs cancelled, by reason: overtaken (running
	// jobs a demand miss overtook), client_gone (queued or running jobs of a
	// client connection that ended).
	PrefetchCancelled *prometheus.CounterVec
	// PrefetchPlanning is the time the learned planner spends, by stage:
	// learn (learning from each read, on the learner's goroutine) and
	// choose (a speculative job choosing what to fetch, less its waits for
	// the origin). Wall time: CPU on an idle core; on a busy one it
	// includes waits for a core and for the planner's lock.
	PrefetchPlanning *prometheus.CounterVec

	// Coherence.
	StaleFills      prometheus.Counter     // fills refused: older than a change the origin announced
	StaleServed     *prometheus.CounterVec // reason: revalidate, error
	WatchConnected  prometheus.Gauge       // origins whose change stream is up (0 or 1 with one origin)
	WatchChanges    prometheus.Counter     // changes applied from the stream
	WatchReconnects prometheus.Counter     // times the stream was re-established

	// Readiness: the health status that probes and load balancers see.
	Serving        prometheus.Gauge   // 1 while the sidecar's health is SERVING
	ServingChanges prometheus.Counter // times it went from SERVING to NOT_SERVING or back
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

// The reasons of lookahead_prefetch_cancelled_total.
const (
	CancelledOvertaken  = "overtaken"   // a running job a demand miss overtook
	CancelledClientGone = "client_gone" // a queued or running job of a client that went
)

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer) *Set {
	s := &Set{
		Hits:             counterVec("cache_hits_total", "Objects answered from the cache, by tier.", "tier"),
		Misses:           counter("cache_misses_total", "Objects not in the cache when requested."),
		Negative:         counter("cache_negative_hits_total", "Requests answered NOT_FOUND from a remembered absence."),
		Joined:           counter("inflight_joins_total", "Demanded objects that waited for a fetch already in flight."),
		Evictions:        counterVec("cache_evictions_total", "Objects evicted for room, by tier.", "tier"),
		SetsDropped:      counter("cache_sets_dropped_total", "Main-tier writes dropped by ristretto's full set buffer (kept in the prefetch tier instead)."),
		SetsRejected:     counter("cache_sets_rejected_total", "Main-tier writes refused by ristretto's admission policy."),
		OriginRoundTrips: counterVec("origin_round_trips_total", "Requests to the origin by rpc and status code.", "rpc", "code"),
		OriginInFlight:   gaugeVec("origin_in_flight", "Requests to the origin under way, by rpc (an Expand until its stream ends).", "rpc"),
		OriginDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "origin_round_trip_duration_seconds",
			Help:    "Origin round-trip time by rpc.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"rpc"}),
		ObjectsFetched:      counterVec("origin_objects_fetched_total", "Objects received from the origin, by reason (demand, prefetch).", "reason"),
		BytesFetched:        counterVec("origin_fetched_bytes_total", "Object bytes received from the origin, by reason (demand, prefetch).", "reason"),
		PrefetchIssued:      counter("prefetch_issued_total", "Objects fetched speculatively into the prefetch tier."),
		PrefetchUsed:        counter("prefetch_used_total", "Prefetched objects that were later requested."),
		PrefetchWasted:      counter("prefetch_wasted_total", "Prefetched objects evicted or invalidated before any request."),
		PrefetchWastedBytes: counter("prefetch_wasted_bytes_total", "Bytes of prefetched objects evicted or invalidated before any request."),
		PrefetchLate:        counter("prefetch_late_total", "Requests that arrived while their object's prefetch was still in flight."),
		PrefetchDropped:     counter("prefetch_dropped_total", "Prefetch jobs dropped from a full prefetch queue, oldest first."),
		PrefetchUnlearned: counter("prefetch_unlearned_total", "Reads the learned planner did not learn from: their request ended (its deadline passed or its client gave up) "+
			"while it waited for room in the learner's queue (--prefetch-queue, --prefetch-queue-bytes); each was answered."),
		PrefetchClamped:   counter("prefetch_clamped_total", "Prefetch jobs that stopped at what half the prefetch tier holds, before their own budget."),
		PrefetchDepth:     gauge("prefetch_depth", "Reference levels currently prefetched below a demanded object."),
		PrefetchWindow:    gauge("prefetch_window", "Speculative origin calls allowed in flight now: --prefetch-workers at most, halved when the origin sheds one or demand round trips slow down."),
		PrefetchRoundTrip: gauge("prefetch_round_trip_seconds", "The demand round trip to the origin the learned planner plans its lookahead with (the baseline of the smallest demand reads, single ids first); 0 until a demand read missed: no lookahead."),
		PrefetchShed:      counter("prefetch_shed_total", "Speculative origin calls the origin refused RESOURCE_EXHAUSTED (shed under load); each backs speculation off, none is an error."),
		PrefetchPreempted: counter("prefetch_preempted_total", "Queued prefetch jobs dropped because a demand miss overtook them: the application read, uncached, an object their triggers refer to."),
		StaleFills:        counter("cache_stale_fills_total", "Fetched copies not cached because the origin had announced a newer version or a deletion."),
		StaleServed:       counterVec("stale_served_total", "Objects answered stale, by reason: revalidate (stale-while-revalidate) or error (stale-if-error).", "reason"),
		WatchConnected:    gauge("watch_connected", "Origin change streams established: 1 while the origin's is, else 0 (with several origins, how many are up)."),
		WatchChanges:      counter("watch_changes_total", "Changes received from the origin's change stream and applied to the cache."),
		WatchReconnects:   counter("watch_reconnects_total", "Times the origin's change stream was re-established after a break."),
	}
	s.PrefetchCancelled = counterVec("prefetch_cancelled_total", "Prefetch jobs cancelled, by reason: overtaken (running jobs a demand miss overtook), "+
		"client_gone (queued or running jobs of a client connection that ended). Their origin calls no demand had joined were cut.", "reason")
	for _, r := range []string{CancelledOvertaken, CancelledClientGone} {
		s.PrefetchCancelled.WithLabelValues(r) // shown at 0 before the first
	}
	s.PrefetchPlanning = counterVec("prefetch_planning_seconds_total", "Time the learned planner (--prefetch-mode adaptive) spent, by stage: learn (learning from each read) "+
		"and choose (speculative jobs choosing what to fetch, their waits for the origin not counted). Wall time, waits for a core and for the planner's lock included: "+
		"set against the round trips prefetch_used_total saved, it says what speculation costs.", "stage")
	for _, st := range []string{StageLearn, StageChoose} {
		s.PrefetchPlanning.WithLabelValues(st) // shown at 0 before the first
	}
	s.OriginDatasetChanges = counterVec("origin_dataset_changes_total", "Times an origin reported another dataset identity than before (a new store on the same address); each flushed the cache and reset the change stream's position. By origin route.", "origin")
	s.Serving = gauge("serving", "1 while the sidecar's health is SERVING (its origin answers health checks), else 0.")
	s.ServingChanges = counter("serving_changes_total", "Times the sidecar's health went from SERVING to NOT_SERVING or back.")
	reg.MustRegister(s.Serving, s.ServingChanges)
	reg.MustRegister(s.StaleFills, s.StaleServed, s.WatchConnected, s.WatchChanges, s.WatchReconnects, s.OriginDatasetChanges)
	reg.MustRegister(s.Hits, s.Misses, s.Negative, s.Joined,
		s.Evictions, s.SetsDropped, s.SetsRejected, s.OriginRoundTrips, s.OriginInFlight, s.OriginDuration,
		s.ObjectsFetched, s.BytesFetched, s.PrefetchIssued, s.PrefetchUsed, s.PrefetchWasted,
		s.PrefetchWastedBytes, s.PrefetchLate, s.PrefetchDropped, s.PrefetchUnlearned, s.PrefetchClamped, s.PrefetchDepth,
		s.PrefetchWindow, s.PrefetchRoundTrip, s.PrefetchShed, s.PrefetchPreempted, s.PrefetchCancelled, s.PrefetchPlanning)
	s.newResilience(reg)
	s.newRoutes(reg)
	return s
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
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

// RegisterUnread exports lookahead_prefetch_unread_objects and
// lookahead_prefetch_unread_bytes, read from unread at every scrape.
func RegisterUnread(reg prometheus.Registerer, unread func() (objects, bytes int64)) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "prefetch_unread_objects",
			Help: "Speculatively fetched objects in the prefetch tier that no request has read yet."},
			func() float64 { n, _ := unread(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "prefetch_unread_bytes",
			Help: "Bytes of the speculatively fetched objects no request has read yet."},
			func() float64 { _, b := unread(); return float64(b) }),
	)
}

// RegisterStreamMemory exports lookahead_stream_memory_bytes, read from held
// at every scrape.
func RegisterStreamMemory(reg prometheus.Registerer, held func() int64) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "stream_memory_bytes",
		Help: "Bytes replies (GetGraph messages, Get and BatchGet replies of more than 1 KiB) hold for their clients now, until gRPC has written them, of --stream-memory-bytes."},
		func() float64 { return float64(held()) }))
}

// RegisterWalkMemory exports lookahead_walk_memory_bytes, read from held at
// every scrape.
func RegisterWalkMemory(reg prometheus.Registerer, held func() int64) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "walk_memory_bytes",
		Help: "Bytes of objects GetGraph walks' Expands hold for their walks now, of --stream-memory-bytes."},
		func() float64 { return float64(held()) }))
}

// RegisterPrefetchQueue exports lookahead_prefetch_queue_bytes{queue},
// read from held at every scrape.
func RegisterPrefetchQueue(reg prometheus.Registerer, held func() (jobs, reads int64)) {
	registerPair(reg, "prefetch_queue_bytes", "queue", [2]string{"jobs", "reads"}, held,
		"Bytes of objects the prefetch queues keep alive now, of --prefetch-queue-bytes each: speculative jobs waiting for a worker (jobs), reads waiting to be learned from (reads).")
}

// RegisterOriginRequests exports lookahead_origin_requests{state}, read
// from count at every scrape.
func RegisterOriginRequests(reg prometheus.Registerer, count func() (running, waiting int64)) {
	registerPair(reg, "origin_requests", "state", [2]string{"running", "waiting"}, count,
		"Gets and BatchGets with an uncached id being served (running, of --max-origin-requests) or waiting for a place (waiting, of --max-origin-waiting).")
}

// registerPair exports the gauge name with label set to each of values,
// read from the first and the second value read returns at every scrape.
func registerPair(reg prometheus.Registerer, name, label string, values [2]string, read func() (int64, int64), help string) {
	opts := func(value string) prometheus.GaugeOpts {
		return prometheus.GaugeOpts{Namespace: namespace, Name: name, ConstLabels: prometheus.Labels{label: value}, Help: help}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(opts(values[0]), func() float64 { n, _ := read(); return float64(n) }),
		prometheus.NewGaugeFunc(opts(values[1]), func() float64 { _, n := read(); return float64(n) }),
	)
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
