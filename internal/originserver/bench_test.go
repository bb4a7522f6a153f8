package originserver

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/store"
)

// w1Trees is W1's dataset at quick size: task trees of fan-out 5, 4 levels.
var w1Trees = graph.TaskTrees{Roots: 100, Fanout: 5, Levels: 4, PayloadBytes: 10, Seed: 1}

// benchServer serves w1Trees from a fresh store.
func benchServer(b *testing.B) *Server {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "origin.db"), store.Config{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Load(w1Trees.Generate); err != nil {
		b.Fatal(err)
	}
	srv, err := New(st, Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// w1Levels returns the ids of each level of 5 task trees, the batches a
// level-by-level reader of one W1 query asks for.
func w1Levels() [][]string {
	var levels [][]string
	for r := range 5 {
		root := w1Trees.RootID(r)
		start, width := 0, 1
		for l := 0; l < w1Trees.Levels; l++ {
			if len(levels) <= l {
				levels = append(levels, nil)
			}
			for k := start; k < start+width; k++ {
				id := root
				if k > 0 {
					id = root + "." + strconv.Itoa(k)
				}
				levels[l] = append(levels[l], id)
			}
			start += width
			width *= w1Trees.Fanout
		}
	}
	return levels
}

// BenchmarkBatchGet is the origin's work for one W1 query read level by
// level: a BatchGet per level of 5 task trees (780 objects), each reply
// encoded as gRPC would send it. It reports origin CPU per object. Profile
// with -cpuprofile.
func BenchmarkBatchGet(b *testing.B) {
	srv := benchServer(b)
	levels := w1Levels()
	objects := 0
	ctx := context.Background()
	cpu := cpuTime()
	for b.Loop() {
		for _, ids := range levels {
			resp, err := srv.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := proto.Marshal(resp); err != nil {
				b.Fatal(err)
			}
			objects += len(ids)
		}
	}
	reportPerObject(b, cpu, objects)
}

// BenchmarkExpand is the origin's work for one W1 query expanded at once:
// an Expand of 5 task trees (780 objects), each message encoded as gRPC
// would send it. It reports origin CPU per object.
func BenchmarkExpand(b *testing.B) {
	srv := benchServer(b)
	roots := w1Levels()[0]
	objects := 0
	stream := &fakeStream[lookaheadv1.ExpandResponse]{ctx: context.Background()}
	stream.onSend = func(m *lookaheadv1.ExpandResponse) error {
		_, err := proto.Marshal(m)
		return err
	}
	req := &lookaheadv1.ExpandRequest{Roots: roots, Depth: uint32(w1Trees.Levels - 1)}
	cpu := cpuTime()
	for b.Loop() {
		stream.sent = stream.sent[:0]
		if err := srv.Expand(req, stream); err != nil {
			b.Fatal(err)
		}
		objects += 5 * w1Trees.PerRoot()
	}
	reportPerObject(b, cpu, objects)
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine it counts the work done, not the waits for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerObject reports wall and CPU microseconds per object since the
// CPU time was start (garbage collection included).
func reportPerObject(b *testing.B, start time.Duration, objects int) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(objects), "µs/object")
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(objects), "cpu-µs/object")
}
