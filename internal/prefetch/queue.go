package prefetch

import (
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// queue holds speculative jobs waiting for a worker: newest first, and when
// full the oldest job is dropped to make room.
//
// Speculation is worth something only if it finishes before the application
// gets there (Knafla's prefetch object distance is measured from where the
// application is now). The newest job was scheduled by the application's
// latest request, so it is the one nearest its position; a job that has
// waited behind a full queue was scheduled for a position the application
// may have left long ago. A first-in-first-out queue would keep exactly the
// stale jobs and drop the fresh ones, and a slow worker would then run
// forever behind the application.
//
// Full means either of two bounds: as many jobs as it has slots, or jobs
// holding maxBytes (see jobBytes). The second is what bounds its memory: a
// queued job keeps its objects alive, also those the cache has evicted
// since, and a count alone would let the queue hold as much as its slots
// times the largest read a request may make (--max-ids objects of
// --max-object-bytes each), which is what the origin sends, not what the
// sidecar was configured to hold. A job larger than maxBytes by itself is
// queued alone, every older job dropped: the newest is the one worth
// running, and it holds no more than the request that scheduled it read
// (a chance job, that read and the lists it read from), which the
// request's own limits bound; the next job pushed drops it.
type queue struct {
	mu       sync.Mutex
	buf      []job // ring of len(buf) slots; guarded by mu
	head     int   // oldest job's slot; guarded by mu
	n        int   // jobs held; guarded by mu
	bytes    int64 // the jobs' jobBytes, summed; guarded by mu
	maxBytes int64

	// ready holds a token while jobs may be waiting. A worker that takes the
	// token and leaves jobs behind puts it back, so every waiting job has a
	// worker on its way.
	ready chan struct{}
}

func newQueue(size int, maxBytes int64) *queue {
	return &queue{buf: make([]job, size), maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// idOverhead is what the queue charges for an id beyond its bytes: its
// string header.
const idOverhead = 16

// jobBytes is what j keeps alive while it waits, the unit of the queue's
// maxBytes: its roots' sizes (sizeBound), and its ids with their headers. Its
// triggers are not counted again: they are always among its roots (a
// static job's triggers are its roots, a chance job's the first of them,
// and overtake only ever removes some), so each object counts once without
// a set to find out. An object in several jobs (a hub whose list many
// reads came from) counts in each: the sum is what the jobs would keep
// alive if nothing were shared, more than they do, so the queue errs
// towards dropping.
func jobBytes(j *job) int64 {
	var n int64
	for _, o := range j.roots {
		n += sizeBound(o)
	}
	for _, ids := range [][]string{j.refresh, j.ahead} {
		for _, id := range ids {
			n += int64(len(id)) + idOverhead
		}
	}
	return n
}

// sizeBound is o's Size or a little more, at no cost where o has its wire
// encoding (graphpb.Decode, as everything the origin sends): that holds
// the id, type and payload and every ref's field and id, the strings Size
// counts, with their tags besides. Size walks the refs, about 10 µs for a
// hub of 10,000, which a read of one would pay on the request's path
// (choose), and a job below it on a worker.
func sizeBound(o *graph.Object) int64 {
	if o.Wire != nil {
		return graph.SizeOf(len(o.Wire), len(o.Refs), 0)
	}
	return o.Size()
}

// push adds j as the newest job. When that makes the queue full, by count
// or by bytes, it drops the oldest jobs until j fits, or until j is alone,
// and returns them, oldest first.
func (q *queue) push(j job) (dropped []job) {
	j.bytes = jobBytes(&j)
	q.mu.Lock()
	for q.n > 0 && (q.n == len(q.buf) || q.bytes+j.bytes > q.maxBytes) {
		dropped = append(dropped, q.take(q.head))
		q.head = (q.head + 1) % len(q.buf)
		q.n--
	}
	q.buf[(q.head+q.n)%len(q.buf)] = j
	q.n++
	q.bytes += j.bytes
	q.mu.Unlock()
	q.signal()
	return dropped
}

// take empties slot i and returns its job, no longer counted in bytes;
// q.mu held.
func (q *queue) take(i int) job {
	j := q.buf[i]
	q.buf[i] = job{} // release its objects to the collector
	q.bytes -= j.bytes
	return j
}

// pop takes the newest job, if any.
func (q *queue) pop() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return job{}, false
	}
	q.n--
	j := q.take((q.head + q.n) % len(q.buf))
	if q.n > 0 {
		q.signal()
	}
	return j, true
}

// filter keeps, in their order, the jobs for which keep reports true, and
// returns how many it dropped. keep may change a job's triggers, never its
// roots or ids, so that what a job is charged (jobBytes) stands.
func (q *queue) filter(keep func(*job) bool) (dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for i := 0; i < q.n; i++ {
		j := &q.buf[(q.head+i)%len(q.buf)]
		if keep(j) {
			q.buf[(q.head+n)%len(q.buf)] = *j
			n++
		} else {
			q.bytes -= j.bytes
		}
	}
	for i := n; i < q.n; i++ {
		q.buf[(q.head+i)%len(q.buf)] = job{} // release its objects to the collector
	}
	dropped, q.n = q.n-n, n
	return dropped
}

// merge offers j to the queued jobs, newest first, until into folds it
// into one (changing it, under the queue's lock), which then becomes the
// newest and is charged j's bytes besides; when that puts the queue over
// its bytes, the oldest other jobs are dropped and returned, oldest first,
// as push drops them. It reports whether a job took j.
func (q *queue) merge(j *job, into func(old *job) bool) (merged bool, dropped []job) {
	add := jobBytes(j)
	q.mu.Lock()
	for i := q.n - 1; i >= 0 && !merged; i-- {
		at := (q.head + i) % len(q.buf)
		if merged = into(&q.buf[at]); merged {
			m := q.buf[at]
			m.bytes += add
			q.bytes += add
			for k := i; k < q.n-1; k++ {
				q.buf[(q.head+k)%len(q.buf)] = q.buf[(q.head+k+1)%len(q.buf)]
			}
			q.buf[(q.head+q.n-1)%len(q.buf)] = m
		}
	}
	for merged && q.n > 1 && q.bytes > q.maxBytes {
		dropped = append(dropped, q.take(q.head))
		q.head = (q.head + 1) % len(q.buf)
		q.n--
	}
	q.mu.Unlock()
	return merged, dropped
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default: // a token is already waiting
	}
}

// len is how many jobs wait.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// held is what the jobs waiting keep alive, in jobBytes.
func (q *queue) held() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes
}
