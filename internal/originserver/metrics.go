package originserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// serverMetrics are the origin's own collectors. Labels are rpc names and
// status codes only, never an object id.
type serverMetrics struct {
	requests      *prometheus.CounterVec   // rpc, code
	duration      *prometheus.HistogramVec // rpc
	objectsServed *prometheus.CounterVec   // rpc
	bytesServed   *prometheus.CounterVec   // rpc
	shed          *prometheus.CounterVec   // rpc
	changesSent   prometheus.Counter
	watchStreams  prometheus.Gauge
	storeRevision prometheus.GaugeFunc
}

func newServerMetrics(reg prometheus.Registerer, st Store) (*serverMetrics, error) {
	const ns, sub = "lookahead", "origin"
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "requests_total",
			Help: "Origin requests by rpc and status code.",
		}, []string{"rpc", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "request_duration_seconds",
			Help:    "Origin request latency by rpc, artificial latency included; for streams, the stream's life.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18),
		}, []string{"rpc"}),
		objectsServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "objects_served_total",
			Help: "Objects sent to clients, by rpc.",
		}, []string{"rpc"}),
		bytesServed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "served_bytes_total",
			Help: "Encoded bytes of the objects sent to clients, by rpc.",
		}, []string{"rpc"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "shed_total",
			Help: "Speculative calls refused RESOURCE_EXHAUSTED because more than --shed-speculative-above calls would have been in flight, by rpc.",
		}, []string{"rpc"}),
		changesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "watch_changes_sent_total",
			Help: "Changes sent to Watch streams.",
		}),
		watchStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "watch_streams",
			Help: "Watch streams currently open.",
		}),
		storeRevision: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "store_revision",
			Help: "Revision of the store's last committed change.",
		}, func() float64 { return float64(st.Revision()) }),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.objectsServed, m.bytesServed,
		m.shed, m.changesSent, m.watchStreams, m.storeRevision} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("originserver: registering metrics: %w", err)
	}
	return m, nil
}

// observe counts one finished call.
func (m *serverMetrics) observe(rpc string, start time.Time, err error) {
	m.requests.WithLabelValues(rpc, status.Code(err).String()).Inc()
	m.duration.WithLabelValues(rpc).Observe(time.Since(start).Seconds())
}

func (m *serverMetrics) served(rpc string, objects, bytes int) {
	m.objectsServed.WithLabelValues(rpc).Add(float64(objects))
	m.bytesServed.WithLabelValues(rpc).Add(float64(bytes))
}
