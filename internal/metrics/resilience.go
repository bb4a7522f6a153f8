package metrics

import "github.com/prometheus/client_golang/prometheus"

// Problems of a malformed origin reply: the values of the problem label of
// lookahead_origin_malformed_total.
const (
	MalformedDuplicate   = "duplicate"   // an object or missing id sent twice
	MalformedUnrequested = "unrequested" // an object or missing id nobody asked for
	MalformedInvalidID   = "invalid_id"  // an object with an empty or too long id
	MalformedInvalidRef  = "invalid_ref" // an object with a ref to an empty or too long id
	MalformedOversized   = "oversized"   // an object larger than the configured maximum
	MalformedConflict    = "conflict"    // an id sent both as an object and as missing
	MalformedUnanswered  = "unanswered"  // an asked-for id neither sent nor listed missing
	// MalformedBeyondBudget: an Expand object its walk did not schedule
	// (beyond the requested depth or max objects, or sent again).
	MalformedBeyondBudget = "beyond_budget"
	MalformedRevision     = "revision" // a Watch change whose revision is below one already applied
	// MalformedEmpty: an Expand message with neither objects nor missing
	// ids, past one for each level the request allows.
	MalformedEmpty = "empty"
	// MalformedFlood: an Expand stream asked for no max_objects whose
	// answers that could not be used (unrequested, duplicates, conflicts,
	// invalid ids) outnumbered those that could.
	MalformedFlood = "flood"
)

// MalformedProblems lists every problem label value.
var MalformedProblems = []string{
	MalformedDuplicate, MalformedUnrequested, MalformedInvalidID, MalformedInvalidRef,
	MalformedOversized, MalformedConflict, MalformedUnanswered, MalformedRevision, MalformedBeyondBudget,
	MalformedEmpty, MalformedFlood,
}

// newResilience creates and registers the origin client's retry, breaker
// and reply-validation collectors.
func (s *Set) newResilience(reg prometheus.Registerer) {
	s.OriginRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "origin_retries_total",
		Help: "Origin requests retried after an UNAVAILABLE answer, by rpc.",
	}, []string{"rpc"})
	s.OriginBreakerState = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "origin_breaker_state",
		Help: "State of the origin circuit breaker: 0 closed, 1 open, 2 half-open.",
	})
	s.OriginBreakerRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "origin_breaker_rejections_total",
		Help: "Origin requests refused without a round trip because the circuit was open, by rpc.",
	}, []string{"rpc"})
	s.OriginMalformed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "origin_malformed_total",
		Help: "Problems found in origin replies and kept out of the cache, by problem.",
	}, []string{"problem"})
	for _, p := range MalformedProblems { // export zeros, so that rate() works from the start
		s.OriginMalformed.WithLabelValues(p)
	}
	reg.MustRegister(s.OriginRetries, s.OriginBreakerState, s.OriginBreakerRejections, s.OriginMalformed)
}
