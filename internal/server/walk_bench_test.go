package server

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// w1Query is one query of W1 at full size: 10 task trees of fan-out 5 and
// 5 levels (781 objects each), 10-byte payloads, read whole.
var w1Query = graph.TaskTrees{Roots: 10, Fanout: 5, Levels: 5, PayloadBytes: 10, Seed: 1}

// BenchmarkColdWalk is W1's query read whole as a cold GetGraph through
// the sidecar (its cache cleared before every walk), and, for comparison,
// as the origin's Expand alone, both over gRPC against the reference
// origin on bbolt in this process. cpu-µs/object is the process's CPU
// (getrusage: user + system, garbage collection included) during the walks
// only, over the objects received: sidecar, origin and client together,
// so the sidecar's share is GetGraph's figure less Expand's. Profile with
// -cpuprofile and focus on the sidecar's packages.
func BenchmarkColdWalk(b *testing.B) {
	var objs []*graph.Object
	require.NoError(b, w1Query.Generate(func(o *graph.Object) error {
		objs = append(objs, o)
		return nil
	}))
	r := newRig(b, objs, rigOptions{engine: modeOff})
	roots := make([]string, w1Query.Roots)
	for i := range roots {
		roots[i] = w1Query.RootID(i)
	}
	depth, maxObjects := uint32(w1Query.Levels-1), uint32(len(objs))
	b.Run("GetGraph", func(b *testing.B) {
		req := &lookaheadv1.GetGraphRequest{Roots: roots, Depth: &depth, MaxObjects: &maxObjects}
		coldWalks(b, r, len(objs), func(ctx context.Context) (int, error) {
			s, err := r.client.GetGraph(ctx, req)
			if err != nil {
				return 0, err
			}
			return drainCount(s, func(m *lookaheadv1.GetGraphResponse) int { return len(m.GetResults()) })
		})
	})
	b.Run("OriginExpand", func(b *testing.B) {
		req := &lookaheadv1.ExpandRequest{Roots: roots, Depth: depth, MaxObjects: maxObjects}
		coldWalks(b, r, len(objs), func(ctx context.Context) (int, error) {
			s, err := r.origin.Expand(ctx, req)
			if err != nil {
				return 0, err
			}
			return drainCount(s, func(m *lookaheadv1.ExpandResponse) int { return len(m.GetObjects()) })
		})
	})
}

// coldWalks runs walk once per iteration on a cleared cache, checks that it
// received want objects and reports CPU and wall time per object.
func coldWalks(b *testing.B, r *rig, want int, walk func(context.Context) (int, error)) {
	ctx := context.Background()
	var cpu time.Duration
	objects := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r.cache.Clear()
		start := cpuTime()
		b.StartTimer()
		n, err := walk(ctx)
		cpu += cpuTime() - start
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("walk received %d objects, want %d", n, want)
		}
		objects += n
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(objects), "µs/object")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(objects), "cpu-µs/object")
}

// drainCount reads a stream to its end, counting the objects of its messages.
func drainCount[M any](s interface{ Recv() (*M, error) }, count func(*M) int) (int, error) {
	n := 0
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += count(m)
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
