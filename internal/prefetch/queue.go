package prefetch

import "sync"

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
type queue struct {
	mu   sync.Mutex
	buf  []job // ring of len(buf) slots; guarded by mu
	head int   // oldest job's slot; guarded by mu
	n    int   // jobs held; guarded by mu

	// ready holds a token while jobs may be waiting. A worker that takes the
	// token and leaves jobs behind puts it back, so every waiting job has a
	// worker on its way.
	ready chan struct{}
}

func newQueue(size int) *queue {
	return &queue{buf: make([]job, size), ready: make(chan struct{}, 1)}
}

// push adds j as the newest job; when the queue is full it drops the oldest
// and returns it.
func (q *queue) push(j job) (old job, dropped bool) {
	q.mu.Lock()
	if q.n == len(q.buf) {
		old = q.buf[q.head]
		q.buf[q.head] = j // the newest takes the oldest's slot
		q.head = (q.head + 1) % len(q.buf)
		dropped = true
	} else {
		q.buf[(q.head+q.n)%len(q.buf)] = j
		q.n++
	}
	q.mu.Unlock()
	q.signal()
	return old, dropped
}

// pop takes the newest job, if any.
func (q *queue) pop() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return job{}, false
	}
	q.n--
	i := (q.head + q.n) % len(q.buf)
	j := q.buf[i]
	q.buf[i] = job{} // release its objects to the collector
	if q.n > 0 {
		q.signal()
	}
	return j, true
}

// filter keeps, in their order, the jobs for which keep (which may change
// them) reports true, and returns how many it dropped.
func (q *queue) filter(keep func(*job) bool) (dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for i := 0; i < q.n; i++ {
		j := &q.buf[(q.head+i)%len(q.buf)]
		if keep(j) {
			q.buf[(q.head+n)%len(q.buf)] = *j
			n++
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
// newest; it reports whether one did.
func (q *queue) merge(into func(old *job) bool) bool {
	q.mu.Lock()
	merged := false
	for i := q.n - 1; i >= 0 && !merged; i-- {
		at := (q.head + i) % len(q.buf)
		if merged = into(&q.buf[at]); merged {
			m := q.buf[at]
			for k := i; k < q.n-1; k++ {
				q.buf[(q.head+k)%len(q.buf)] = q.buf[(q.head+k+1)%len(q.buf)]
			}
			q.buf[(q.head+q.n-1)%len(q.buf)] = m
		}
	}
	q.mu.Unlock()
	return merged
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
