package prefetch

// fifo is a first-in first-out queue in a ring buffer that doubles when
// full: the learned planner's offers in request order, tens of thousands
// at once on W5's friends of friends (at most maxLiveOffers), each pushed
// once and popped once. A slice popped from the front and appended at the
// back copied every live entry each time it was compacted or outgrew its
// array, with the collector's write barrier on each pointer: about a tenth
// of the learner's time in a profile of four friends-of-friends readers
// (docs/benchmark-history.md, "Fifteenth session"). The buffer keeps its
// size once grown, as the slice kept its array.
type fifo[T any] struct {
	buf  []T // len a power of two, or 0
	head int // index of the first entry
	n    int // entries
}

// len returns the entries queued.
func (q *fifo[T]) len() int { return q.n }

// push adds v at the back.
func (q *fifo[T]) push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// front returns the first entry; the queue must not be empty.
func (q *fifo[T]) front() *T { return &q.buf[q.head] }

// pop removes and returns the first entry; the queue must not be empty.
func (q *fifo[T]) pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero // what it points at is the collector's again
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v
}

// grow doubles the buffer, its entries first in order.
func (q *fifo[T]) grow() {
	buf := make([]T, max(64, 2*len(q.buf)))
	k := copy(buf, q.buf[q.head:])
	copy(buf[k:], q.buf[:q.head])
	q.buf, q.head = buf, 0
}
