package prefetch

import (
	"context"
	"fmt"
	"testing"

	"github.com/lookahead-dev/lookahead/internal/cache"
	"github.com/lookahead-dev/lookahead/internal/fetch"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// hub is an object with n refs, each to an id of its own.
func hub(id string, n int) *graph.Object {
	o := &graph.Object{ID: id, Version: 1, Type: "Hub", Refs: make([]graph.Ref, n)}
	for i := range o.Refs {
		o.Refs[i] = graph.Ref{Field: "items", ID: fmt.Sprintf("%s.%d", id, i)}
	}
	return o
}

// fullQueue returns a scheduler whose one worker waits at the origin and
// whose queue is full of jobs, each triggered by a hub of refs refs.
func fullQueue(b *testing.B, queue, refs int) (*Scheduler, []*graph.Object) {
	fo := newFakeOrigin([]*graph.Object{node("busy")})
	fo.Block["busy"] = true
	r := newRigWith(b, fo, Config{Workers: 1, QueueSize: queue}, fetch.Config{}, Static{}, cache.Config{})
	s := r.engine.s
	s.enqueue(job{refresh: []string{"busy"}})
	<-fo.Started // the worker holds nothing else: the queue stays as filled
	hubs := make([]*graph.Object, queue)
	for i := range hubs {
		hubs[i] = hub(fmt.Sprintf("hub%d", i), refs)
		s.enqueue(job{roots: hubs[i : i+1], triggers: hubs[i : i+1], budget: graph.Budget{Depth: 1}})
	}
	return s, hubs
}

// missOf is the answer to a request that missed id.
func missOf(id string) *fetch.Answer {
	return &fetch.Answer{Results: []fetch.Result{{Object: node(id), Status: fetch.StatusMiss}}}
}

// BenchmarkMissFullQueue is what telling the scheduler of one demand miss
// costs the request (Scheduler.After runs in it) while the queue is full of
// jobs triggered by hubs: the miss overtakes none of them.
func BenchmarkMissFullQueue(b *testing.B) {
	for _, c := range []struct{ queue, refs int }{{64, 1000}, {1024, 100}, {1024, 1000}} {
		b.Run(fmt.Sprintf("queue=%d/hub=%d", c.queue, c.refs), func(b *testing.B) {
			s, _ := fullQueue(b, c.queue, c.refs)
			a := missOf("elsewhere")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.After(context.Background(), a, Hint{})
			}
		})
	}
}

// BenchmarkMissOvertakesHubJob is one miss that overtakes a queued hub job
// (a child of its hub is read), and the job of a hub read that takes its
// place: what a request that misses, and one that schedules, each cost.
func BenchmarkMissOvertakesHubJob(b *testing.B) {
	for _, c := range []struct{ queue, refs int }{{64, 1000}, {1024, 1000}} {
		b.Run(fmt.Sprintf("queue=%d/hub=%d", c.queue, c.refs), func(b *testing.B) {
			s, hubs := fullQueue(b, c.queue, c.refs)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h := hubs[i%len(hubs)]
				s.After(context.Background(), missOf(h.Refs[i%len(h.Refs)].ID), Hint{})
				again := &graph.Object{ID: h.ID, Version: h.Version, Type: h.Type, Refs: h.Refs} // a fresh copy
				s.enqueue(job{roots: []*graph.Object{again}, triggers: []*graph.Object{again}, budget: graph.Budget{Depth: 1}})
			}
		})
	}
}

// BenchmarkHubJobQueued is what queueing the job below a hub costs the
// request that read it (the hit of a hub), with the queue full of hub
// jobs behind a worker held at the origin, so that the oldest is dropped.
// cpu-ns/op is the process's CPU per job queued, indexing off the request
// included.
func BenchmarkHubJobQueued(b *testing.B) {
	for _, c := range []struct{ queue, refs int }{{64, 1000}, {1024, 1000}} {
		b.Run(fmt.Sprintf("queue=%d/hub=%d", c.queue, c.refs), func(b *testing.B) {
			s, hubs := fullQueue(b, c.queue, c.refs)
			cpu := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h := hubs[i%len(hubs)]
				again := &graph.Object{ID: h.ID, Version: h.Version, Type: h.Type, Refs: h.Refs} // a fresh copy
				s.enqueue(job{roots: []*graph.Object{again}, triggers: []*graph.Object{again}, budget: graph.Budget{Depth: 1}})
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkTriggerHeldAndReleased is what the index costs one job below a
// trigger of refs refs while the queue is short: held when a request
// queues it, released when it ends.
func BenchmarkTriggerHeldAndReleased(b *testing.B) {
	for _, refs := range []int{4, 100, 1000} {
		b.Run(fmt.Sprintf("refs=%d", refs), func(b *testing.B) {
			x := newTriggerIndex()
			ts := []*graph.Object{hub("hub", refs)}
			b.ReportAllocs()
			for b.Loop() {
				x.hold(ts)
				x.release(ts)
			}
		})
	}
}
