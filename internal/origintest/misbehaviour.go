package origintest

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// Misbehaviour says how the origin departs from its contract. The zero value
// is a well-behaved origin; Origin.Misbehave replaces the current one, and
// calls under way see the change at their next step.
type Misbehaviour struct {
	// BatchGetErr, when set, is every BatchGet's answer (make it with
	// status.Error to choose the code).
	BatchGetErr error
	// Omit lists ids a BatchGet reply or an Expand level leaves out of both
	// objects and missing_ids, although they were asked for.
	Omit []string
	// Delay is waited before each BatchGet reply and each Expand message.
	Delay time.Duration
	// Hang: BatchGet and Expand never answer; they end when the caller
	// gives up (or the server stops).
	Hang bool
	// Gate, when set, is waited for (until it is closed, or the caller
	// gives up) before each BatchGet reply and each Expand message: a
	// test holds the origin's answers back until it has set the scene.
	Gate <-chan struct{}
	// IgnoreBudget: Expand walks past the request's depth and max_objects
	// until it runs out of objects or the caller goes away. With Generate
	// it never runs out.
	IgnoreBudget bool
	// Level numbers the n-th level an Expand sends (0 for the roots); nil
	// = n. See LevelAlways, LevelBackwards, LevelSkipping.
	Level func(n uint32) uint32
	// Empty is how many messages with neither objects nor missing ids an
	// Expand sends before each level (of that level's number): a level
	// with nothing to say may send one; math.MaxInt never gets past the
	// roots, and says nothing until the caller goes away.
	Empty int
	// Unrequested is how many messages an Expand sends after each level
	// (of that level's number), each of one object no ref leads to, which
	// nobody asked for: math.MaxInt never gets past the roots, and sends
	// such objects until the caller goes away.
	Unrequested int
	// Generate makes the object of an id that is not stored, for BatchGet
	// and Expand; nil = such ids are missing. See Endless.
	Generate func(id string) *graph.Object
	// Health is what grpc.health answers for every service name; the zero
	// value (UNKNOWN) means SERVING.
	Health healthpb.HealthCheckResponse_ServingStatus
	// WatchStart, when set, is the revision a Watch stream announces in
	// its header instead of the highest one so far.
	WatchStart *uint64
	// ShedSpeculative: BatchGet and Expand calls marked speculative
	// (origin.SpeculativeKey) are refused RESOURCE_EXHAUSTED, as an origin
	// over its load limit may refuse them (within the contract).
	ShedSpeculative bool
}

// LevelAlways numbers every Expand level n, e.g. LevelAlways(math.MaxUint32).
func LevelAlways(n uint32) func(uint32) uint32 { return func(uint32) uint32 { return n } }

// LevelBackwards numbers levels 0, 1, 0, 1, ...: from the third on, each
// other level goes back.
func LevelBackwards(n uint32) uint32 { return n % 2 }

// LevelSkipping numbers levels 0, 2, 4, ...: every level after the roots
// skips one.
func LevelSkipping(n uint32) uint32 { return 2 * n }

// Endless generates, for any id, an object with fanout refs (field "child")
// to id+"/0" ... id+"/fanout-1": a tree without end, for Generate.
func Endless(fanout int) func(id string) *graph.Object {
	return func(id string) *graph.Object {
		o := &graph.Object{ID: id, Version: 1, Type: "Endless", Refs: make([]graph.Ref, fanout)}
		for i := range o.Refs {
			o.Refs[i] = graph.Ref{Field: "child", ID: id + "/" + strconv.Itoa(i)}
		}
		return o
	}
}

// Wide returns an object with n refs (field "r") to ids "w0" ... : with n
// = 1,000,000 about 13 MiB on the wire.
func Wide(id string, n int) *graph.Object {
	o := &graph.Object{ID: id, Version: 1, Type: "Wide", Refs: make([]graph.Ref, n)}
	for i := range o.Refs {
		o.Refs[i] = graph.Ref{Field: "r", ID: "w" + strconv.Itoa(i)}
	}
	return o
}

// without is ids less those m omits.
func (m Misbehaviour) without(ids []string) []string {
	if len(m.Omit) == 0 {
		return ids
	}
	omit := make(map[string]bool, len(m.Omit))
	for _, id := range m.Omit {
		omit[id] = true
	}
	var ask []string
	for _, id := range ids {
		if !omit[id] {
			ask = append(ask, id)
		}
	}
	return ask
}

// wait sleeps bad's Delay, waits for its Gate, or until ctx ends when it
// says Hang; it returns ctx's status if it ended.
func wait(ctx context.Context, bad Misbehaviour) error {
	if bad.Hang {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	if bad.Gate != nil {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-bad.Gate:
		}
	}
	d := bad.Delay
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-t.C:
		return nil
	}
}

// shed refuses a speculative call if bad says to.
func shed(ctx context.Context, bad Misbehaviour) error {
	if bad.ShedSpeculative && origin.IsSpeculative(ctx) {
		return status.Error(codes.ResourceExhausted, "origintest: speculative calls are shed")
	}
	return nil
}
