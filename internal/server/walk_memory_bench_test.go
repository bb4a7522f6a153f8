package server

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// tree generates, for "t" and the ids below it ("t/0", "t/0/3", …), an
// object of payload bytes with fanout refs to its children: a tree without
// end (fanout 1: a chain, one object per level).
func tree(fanout, payload int) func(id string) *graph.Object {
	return func(id string) *graph.Object {
		if id != "t" && !strings.HasPrefix(id, "t/") {
			return nil
		}
		o := &graph.Object{ID: id, Version: 1, Payload: make([]byte, payload), Refs: make([]graph.Ref, fanout)}
		for i := range o.Refs {
			o.Refs[i] = graph.Ref{Field: "child", ID: id + "/" + strconv.Itoa(i)}
		}
		return o
	}
}

// BenchmarkWalkMemory measures the peak memory of one whole walk: a cold
// GetGraph of a generated tree, streamed by an origin in this process as
// fast as it can, read by a client that takes a millisecond per message,
// through a sidecar with the default limits whose main tier holds 1 MiB (so
// that the walk's objects are not the cache's too). peak-heap-MiB is the
// most the process's heap objects grew during the walk over what they were
// before it (sidecar, origin and client together), peak-rss-MiB the
// process's resident peak (VmHWM, reset before each walk), MiB-walked the
// objects' payloads. The collector runs at GOGC=5 meanwhile.
func BenchmarkWalkMemory(b *testing.B) {
	// Collected often, the heap stays near its live objects: its peak is
	// what the walk holds, not the garbage of a collection cycle.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	for _, shape := range []struct {
		name                    string
		fanout, levels, payload int
	}{{"tree-4x6-2KiB", 4, 6, 2 << 10}, {"chain-400-64KiB", 1, 400, 64 << 10}} {
		b.Run(shape.name, func(b *testing.B) {
			o := origintest.New()
			o.Misbehave(origintest.Misbehaviour{Generate: tree(shape.fanout, shape.payload)})
			r := newHostileRigCache(b, o, origin.Config{}, cache.Config{MainBytes: 1 << 20, PrefetchBytes: 1 << 20}, Config{MaxDepth: shape.levels})
			req := &lookaheadv1.GetGraphRequest{Roots: []string{"t"}, Depth: u32(uint32(shape.levels - 1))}
			var heap, rss, walked float64
			for b.Loop() {
				h, s, n := walkPeak(b, r, req)
				heap, rss, walked = heap+h, rss+s, walked+n
			}
			n := float64(b.N) * (1 << 20)
			b.ReportMetric(heap/n, "peak-heap-MiB")
			b.ReportMetric(rss/n, "peak-rss-MiB")
			b.ReportMetric(walked/n, "MiB-walked")
		})
	}
}

// walkPeak runs one walk of req, slowly read, on a cleared cache and
// returns its peak heap growth, the process's resident peak and the bytes
// of the objects received.
func walkPeak(b *testing.B, r *hostileRig, req *lookaheadv1.GetGraphRequest) (heap, rss, walked float64) {
	r.f.Clear()
	runtime.GC()
	resetPeakRSS()
	base := heapObjects()
	peak := base
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, heapObjects())
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	s, err := r.client.GetGraph(context.Background(), req)
	for err == nil {
		var m *lookaheadv1.GetGraphResponse
		if m, err = s.Recv(); err == nil {
			for _, res := range m.GetResults() {
				walked += float64(len(res.GetObject().GetPayload()))
			}
			time.Sleep(time.Millisecond) // a slow client
		}
	}
	close(done)
	<-sampled
	if !errors.Is(err, io.EOF) {
		b.Fatal(err)
	}
	return float64(peak - base), float64(peakRSS()), walked
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// resetPeakRSS makes the kernel's resident peak (VmHWM) start again from
// the resident size now.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's resident peak in bytes, 0 if unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
