package metrics

import "github.com/prometheus/client_golang/prometheus"

// DefaultRoute is the origin label of the origin serving every id no other
// route owns, and of the only origin when there is one.
const DefaultRoute = "default"

// newRoutes creates and registers the per-origin collectors: with several
// origins (--origin prefix=target), each is labelled with its route's
// name, never with an id, so the label's values are as few as the routes.
func (s *Set) newRoutes(reg prometheus.Registerer) {
	s.OriginRouteRoundTrips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "origin_route_round_trips_total",
		Help: "Requests to each origin, by origin route, rpc and status code (lookahead_origin_round_trips_total is their sum).",
	}, []string{"origin", "rpc", "code"})
	s.OriginRouteBreakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "origin_route_breaker_state",
		Help: "State of each origin's circuit breaker, by origin route: 0 closed, 1 open, 2 half-open.",
	}, []string{"origin"})
	s.WatchRouteConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "watch_route_connected",
		Help: "1 while an origin's change stream is established, else 0, by origin route.",
	}, []string{"origin"})
	reg.MustRegister(s.OriginRouteRoundTrips, s.OriginRouteBreakerState, s.WatchRouteConnected)
}
