package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// latencyToxic is the name of the one toxic a link carries.
const latencyToxic = "latency_downstream"

// proxies is an in-process toxiproxy server: every path to an origin (from a
// sidecar or from a peer client) goes through one of its proxies.
type proxies struct {
	srv *toxiproxy.ApiServer
}

func newProxies() *proxies {
	return &proxies{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
}

// link is one proxy: a listen address in front of an upstream.
type link struct {
	p  *toxiproxy.Proxy
	ms int // current one-way latency in ms
}

// add starts a proxy on a free loopback port in front of upstream.
func (ps *proxies) add(name, upstream string) (*link, error) {
	p := toxiproxy.NewProxy(ps.srv, name, "127.0.0.1:0", upstream)
	if err := ps.srv.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	return &link{p: p}, nil
}

// Addr is the proxy's listen address.
func (l *link) Addr() string { return l.p.Listen }

// setLatency puts ms of latency on the downstream direction (origin to
// client) of every connection, current and future; 0 removes it. Toxiproxy
// takes whole milliseconds and overshoots: measure the round trip.
func (l *link) setLatency(ms int) error {
	if ms == l.ms {
		return nil
	}
	if l.ms > 0 {
		if err := l.p.Toxics.RemoveToxic(context.Background(), latencyToxic); err != nil {
			return fmt.Errorf("removing latency: %w", err)
		}
	}
	l.ms = 0
	if ms > 0 {
		js := fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","attributes":{"latency":%d}}`, latencyToxic, ms)
		if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("adding latency: %w", err)
		}
	}
	l.ms = ms
	return nil
}

// close stops every proxy and its connections.
func (ps *proxies) close() { _ = ps.srv.Collection.Clear() }

// pingRTT measures the round trip to the gRPC server at addr the way the
// sidecar pays it: the standard health Check over one connection, median of n
// after a few warm-up calls.
func pingRTT(ctx context.Context, addr string, n int) (time.Duration, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	var ds []time.Duration
	for i := 0; i < n+5; i++ {
		start := time.Now()
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			return 0, fmt.Errorf("ping %s: %w", addr, err)
		}
		if i >= 5 {
			ds = append(ds, time.Since(start))
		}
	}
	return medianDur(ds), nil
}

// measureBandwidth pushes size bytes through a fresh proxy (no toxic) to an
// in-process TCP sink and returns bytes per second, median of reps: the
// bandwidth of the proxied loopback link that the lower bounds use.
func measureBandwidth(ps *proxies, size int64, reps int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	defer func() { ln.Close(); wg.Wait() }()
	got := make(chan int64, reps)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			got <- n
		}
	}()
	l, err := ps.add("bandwidth", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer func() { _ = ps.srv.Collection.Remove("bandwidth") }()
	buf := make([]byte, 64<<10)
	var rates []float64
	for r := 0; r < reps; r++ {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			return 0, err
		}
		start := time.Now()
		for sent := int64(0); sent < size; sent += int64(len(buf)) {
			if _, err := c.Write(buf); err != nil {
				c.Close()
				return 0, err
			}
		}
		c.(*net.TCPConn).CloseWrite()
		select {
		case n := <-got:
			rates = append(rates, float64(n)/time.Since(start).Seconds())
		case <-time.After(30 * time.Second):
			c.Close()
			return 0, fmt.Errorf("bandwidth probe: sink got nothing")
		}
		c.Close()
	}
	return median(rates), nil
}
