package lookahead

import "github.com/prometheus/client_golang/prometheus"

// NearStats counts what the near cache did since Dial.
type NearStats struct {
	Hits, Misses  uint64 // reads answered in-process / passed to the sidecar
	PushesRecv    uint64 // objects the sidecar pushed
	PushesUsed    uint64 // pushed objects read at least once
	Invalidations uint64 // held copies dropped by an invalidation or a write
	Flushes       uint64 // times the whole near cache was emptied
	Bytes         int64  // held now, tombstones included
	Objects       int    // held now
}

// NearStats returns the near cache's counters; zero without one.
func (c *Client) NearStats() NearStats {
	if c.near == nil {
		return NearStats{}
	}
	s := c.near.store
	st := NearStats{
		Hits: s.stats.hits.Load(), Misses: s.stats.misses.Load(),
		PushesRecv: s.stats.pushes.Load(), PushesUsed: s.stats.pushesUsed.Load(),
		Invalidations: s.stats.invalidations.Load(), Flushes: s.stats.flushes.Load(),
	}
	s.mu.RLock()
	st.Bytes = s.bytes
	for _, e := range s.entries {
		if e.obj != nil {
			st.Objects++
		}
	}
	s.mu.RUnlock()
	return st
}

// Collector exports NearStats to Prometheus as lookahead_client_near_*;
// register it on a registry of your choice.
func (c *Client) Collector() prometheus.Collector { return collector{c} }

var nearDescs = struct {
	hits, misses, pushes, used, invalidations, flushes, bytes, objects *prometheus.Desc
}{
	hits:          prometheus.NewDesc("lookahead_client_near_hits_total", "Reads answered by the near cache.", nil, nil),
	misses:        prometheus.NewDesc("lookahead_client_near_misses_total", "Reads the near cache passed to the sidecar.", nil, nil),
	pushes:        prometheus.NewDesc("lookahead_client_near_pushes_received_total", "Objects the sidecar pushed.", nil, nil),
	used:          prometheus.NewDesc("lookahead_client_near_pushes_used_total", "Pushed objects read at least once.", nil, nil),
	invalidations: prometheus.NewDesc("lookahead_client_near_invalidations_total", "Near copies dropped by an invalidation or a write.", nil, nil),
	flushes:       prometheus.NewDesc("lookahead_client_near_flushes_total", "Times the near cache was emptied (stream break, flush event).", nil, nil),
	bytes:         prometheus.NewDesc("lookahead_client_near_bytes", "Bytes the near cache holds.", nil, nil),
	objects:       prometheus.NewDesc("lookahead_client_near_objects", "Objects the near cache holds.", nil, nil),
}

type collector struct{ c *Client }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	d := nearDescs
	for _, x := range []*prometheus.Desc{d.hits, d.misses, d.pushes, d.used, d.invalidations, d.flushes, d.bytes, d.objects} {
		ch <- x
	}
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	s, d := k.c.NearStats(), nearDescs
	counter := func(desc *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v))
	}
	counter(d.hits, s.Hits)
	counter(d.misses, s.Misses)
	counter(d.pushes, s.PushesRecv)
	counter(d.used, s.PushesUsed)
	counter(d.invalidations, s.Invalidations)
	counter(d.flushes, s.Flushes)
	ch <- prometheus.MustNewConstMetric(d.bytes, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(d.objects, prometheus.GaugeValue, float64(s.Objects))
}

// NearConnected reports whether the near cache's channel to the sidecar is
// up, so that reads may be answered in-process; false without a near cache.
func (c *Client) NearConnected() bool {
	if c.near == nil {
		return false
	}
	c.near.mu.RLock()
	defer c.near.mu.RUnlock()
	return c.near.live
}
