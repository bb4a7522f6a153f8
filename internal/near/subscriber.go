package near

import "github.com/lookahead-dev/lookahead/internal/graph"

// Kind is what an event asks of the subscriber.
type Kind int

// Event kinds.
const (
	KindInvalidation Kind = iota + 1
	KindPush
	KindFlush
	KindHeartbeat
)

func (k Kind) String() string {
	switch k {
	case KindInvalidation:
		return "invalidation"
	case KindPush:
		return "push"
	case KindFlush:
		return "flush"
	case KindHeartbeat:
		return "heartbeat"
	}
	return "unknown"
}

// Event is one step for a subscriber to apply, in queue order.
type Event struct {
	Kind    Kind
	ID      string        // invalidation
	Version uint64        // invalidation: copies older than it are stale; 0 = any copy
	Deleted bool          // invalidation
	Object  *graph.Object // push; shared, never modified
	Reason  string        // push: the prediction; flush: why
}

// Subscriber is one client's near-cache channel. Its state is guarded by
// the hub's lock.
type Subscriber struct {
	ID string

	budget    int64
	label     string
	held      map[string]struct{}
	heldBytes int64 // of held, counted as Hub.holdLocked does
	queue     []Event
	queued    int64 // bytes of the pushes in queue
	pending   int64 // bytes of the other events in queue (Hub.pending)
	closed    bool
	reason    string
	wake      chan struct{} // a token when the queue may have events
	gone      chan struct{} // closed when the hub disconnected the subscriber

	// takenPushes and takenOther are the bytes of the pushes and of the
	// other events taken from queue and not released yet (Hub.TakeHeld):
	// on their way to the client, still in the sidecar's memory, they
	// count as queued ones do.
	takenPushes, takenOther int64
}

// Wake is signalled when events may be queued.
func (s *Subscriber) Wake() <-chan struct{} { return s.wake }

// Gone is closed when the hub disconnected the subscriber; Reason says why.
func (s *Subscriber) Gone() <-chan struct{} { return s.gone }

// Reason says why the hub disconnected the subscriber; read it after Gone.
func (s *Subscriber) Reason() string { return s.reason }

func (s *Subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// holdsAny reports whether s holds one of ids. Called with the hub's lock.
func (s *Subscriber) holdsAny(ids []string) bool {
	for _, id := range ids {
		if _, ok := s.held[id]; ok {
			return true
		}
	}
	return false
}
