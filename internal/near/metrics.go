package near

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxLabels bounds the distinct client names in metric labels; later names
// count as "other".
const maxLabels = 16

type hubMetrics struct {
	subscribers prometheus.Gauge
	queued      prometheus.Gauge
	held        prometheus.Gauge
	events      *prometheus.CounterVec
	pushDropped *prometheus.CounterVec
	disconnects *prometheus.CounterVec
	expired     *prometheus.CounterVec

	mu    sync.Mutex
	names map[string]bool
}

func newHubMetrics(reg prometheus.Registerer) *hubMetrics {
	m := &hubMetrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lookahead_near_subscribers",
			Help: "Near-cache channels (Subscribe streams) open."}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lookahead_near_queued_bytes",
			Help: "Bytes of pushed objects queued for near-cache subscribers, not sent yet."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "lookahead_near_held_bytes",
			Help: "Bytes of the ids near-cache subscribers are tracked for, each counted with 48 bytes of overhead."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookahead_near_events_total",
			Help: "Events sent to near-cache subscribers, by client name and kind (invalidation, push, flush, heartbeat)."},
			[]string{"client", "kind"}),
		pushDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookahead_near_push_dropped_total",
			Help: "Predicted objects not pushed because the subscriber's budget, the hub's queue bytes or its queue was full."},
			[]string{"client"}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookahead_near_disconnects_total",
			Help: "Near-cache subscribers the sidecar disconnected, by client name and reason (behind)."},
			[]string{"client", "reason"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookahead_near_expired_total",
			Help: "Invalidations sent to near-cache subscribers because the sidecar's copy of an id they held reached its --ttl."},
			[]string{"client"}),
		names: map[string]bool{},
	}
	reg.MustRegister(m.subscribers, m.queued, m.held, m.events, m.pushDropped, m.disconnects, m.expired)
	return m
}

// label maps a client's announced name to a bounded label value.
func (m *hubMetrics) label(name string) string {
	if name == "" {
		return "unnamed"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names[name] {
		return name
	}
	if len(m.names) >= maxLabels {
		return "other"
	}
	m.names[name] = true
	return name
}
