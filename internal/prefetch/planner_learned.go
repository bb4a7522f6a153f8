package prefetch

import (
	"math"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// LearnedConfig tunes the learned planner. Zero values take the defaults.
type LearnedConfig struct {
	// Threshold is the least probability that the application reads an
	// object for it to be fetched speculatively: the break-even of a
	// prefetch, whose cost (origin work, bytes, sidecar CPU on the cores it
	// shares with the application, cache room) is paid whether or not the
	// object is read, against the round trip it saves when it is. At 1/2,
	// speculation fetches, if its estimates are right, at most about two
	// objects for each one read. Default 0.5: on W5 at quick size the hot
	// spot fetched 8 to 14 objects per object read at 0.3, 6 to 7 at 0.5.
	Threshold float64
	MaxDepth  int // levels below a read object, however likely; default 8
	// MaxObjects caps the objects one expansion fetches; default 1000.
	MaxObjects int
	// Horizon is how many application requests an offered ref is remembered
	// for: one not read within it counts as not followed; default 512.
	Horizon int
	// Prior is the probability assumed for a ref field nothing is known
	// about yet; below Threshold, so that speculation starts only once the
	// application has shown what it follows; default 0.25.
	Prior float64
}

func (c *LearnedConfig) setDefaults() {
	if c.Threshold == 0 {
		c.Threshold = 0.5
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = 8
	}
	if c.MaxObjects == 0 {
		c.MaxObjects = 1000
	}
	if c.Horizon == 0 {
		c.Horizon = 512
	}
	if c.Prior == 0 {
		c.Prior = 0.25
	}
}

// Learned is the planner that needs no settings. It learns, per object type,
// ref field and position in the field's list, the probability that an
// application that read an object goes on to read the object a ref points
// to, and the scheduler fetches only what is likely enough to be read
// (Chooser). Hubs are read the way applications read them: in list order, a
// few at a time (TAO reads associations the same way), so a position far
// down a list is only fetched once applications are seen to read that far.
//
// Evidence: a ref is offered when the object holding it is answered, and
// followed when the object it points to is requested later; an offer not
// followed within Horizon requests counts as not followed. A position's
// estimate borrows strength from its field's, and the field's from Prior,
// so that one read of the first friend already says something about the
// second.
type Learned struct {
	cfg LearnedConfig

	mu      sync.Mutex
	stats   map[edgeKey]*fieldStats // guarded by mu
	pending map[string]offer        // child id → the last offer of it; guarded by mu
	ring    []ringEntry             // offers in request order, for the horizon; guarded by mu
	head    int                     // first live ring entry; guarded by mu
	request int                     // requests observed; guarded by mu
	lists   map[listKey]*listRun    // lists being read: parent and field; guarded by mu
	depth   map[string]int          // depth at which recently read objects were read; guarded by mu
	reads   []ringEntry             // reads in request order, to forget depth; guarded by mu
}

// edgeKey says where a ref sits: its field, the type holding it, and how
// far below an object the application asked for directly (depth 0) that
// object was read. The depth tells a user's friends read as the start of a
// walk from the friends of a friend nobody reads: the same field, followed
// at one depth and not at the next.
type edgeKey struct {
	depth      int
	typ, field string
}

// maxContextDepth caps the depth in edgeKey: deeper levels share one.
const maxContextDepth = 4

type listKey struct{ parent, field string }

// listRun is what was read of one parent's list.
type listRun struct {
	followed int
	request  int // when it was last followed
}

// fieldStats are the decided offers of one type's ref field, by position
// bucket, and the longest run read from one list.
type fieldStats struct {
	offered, followed [buckets]float64
	allOffered        float64
	allFollowed       float64
	maxRun            int
}

type offer struct {
	key    edgeKey // key.depth is the parent's
	pos    int
	parent string
	seq    int // request at which it was offered
}

type ringEntry struct {
	id  string
	seq int
}

// buckets of list positions: 0, 1, 2, 3, 4-7, 8-15, ... 512+.
const buckets = 12

func bucket(pos int) int {
	if pos < 4 {
		return pos
	}
	b := 2 + int(math.Log2(float64(pos)))
	return min(b, buckets-1)
}

// NewLearned makes a learned planner.
func NewLearned(cfg LearnedConfig) *Learned {
	cfg.setDefaults()
	return &Learned{cfg: cfg, stats: map[edgeKey]*fieldStats{}, pending: map[string]offer{},
		lists: map[listKey]*listRun{}, depth: map[string]int{}}
}

// Budget implements Planner. The scheduler asks it only for a request with
// a hint (without one it chooses by Chances): the hint's settings, one level
// and MaxObjects where the hint is silent.
func (l *Learned) Budget(_ []*graph.Object, h Hint) graph.Budget {
	return h.apply(graph.Budget{Depth: 1, MaxObjects: l.cfg.MaxObjects})
}

// Threshold implements Chooser.
func (l *Learned) Threshold() float64 { return l.cfg.Threshold }

// Limits implements Chooser.
func (l *Learned) Limits() (depth, objects int) { return l.cfg.MaxDepth, l.cfg.MaxObjects }

// Depth implements Chooser: how far below a direct request id was read
// last; 0 when it was requested directly or is not remembered.
func (l *Learned) Depth(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.depth[id]
}

// Chances implements Chooser: the probability of each ref of o being read,
// given that o is read at depth, in ref order; refs beyond what
// applications were seen to read from one list get 0.
func (l *Learned) Chances(o *graph.Object, depth int, out []float64) []float64 {
	out = out[:0]
	l.mu.Lock()
	defer l.mu.Unlock()
	pos := map[string]int{}
	for _, r := range o.Refs {
		i := pos[r.Field]
		pos[r.Field] = i + 1
		out = append(out, l.chanceLocked(edgeKey{min(depth, maxContextDepth), o.Type, r.Field}, i))
	}
	return out
}

func (l *Learned) chanceLocked(k edgeKey, pos int) float64 {
	s := l.stats[k]
	if s == nil {
		return l.cfg.Prior
	}
	// A list is read from its start, a few at a time: nothing beyond half
	// again the longest run read from one list of this field so far (and
	// one more), so that a list read to its end is fetched ahead in growing
	// steps while a hub's thousands of refs cost a few.
	if pos > s.maxRun+s.maxRun/2 {
		return 0
	}
	const weight = 2 // pseudo-observations of the level above
	field := (s.allFollowed + weight*l.cfg.Prior) / (s.allOffered + weight)
	b := bucket(pos)
	return (s.followed[b] + weight*field) / (s.offered[b] + weight)
}

// Read implements Chooser: objs were answered to one request. Each is a
// follow of the ref that offered it, if any; its own refs are offered in
// turn. It returns the parents whose lists the request read from: their next
// refs became likelier.
func (l *Learned) Read(objs []*graph.Object) (parents []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.request++
	l.expireLocked()
	for _, o := range objs {
		d := 0 // asked for directly
		if of, ok := l.pending[o.ID]; ok {
			delete(l.pending, o.ID)
			l.decideLocked(of, true)
			parents = append(parents, of.parent)
			d = of.key.depth + 1
		}
		l.depth[o.ID] = d
		l.reads = append(l.reads, ringEntry{id: o.ID, seq: l.request})
		l.offerLocked(o, d)
	}
	return dedupe(parents)
}

// offersPerList bounds what one object's list costs to remember: its first
// refs, where applications read.
const offersPerList = 256

func (l *Learned) offerLocked(o *graph.Object, depth int) {
	pos := map[string]int{}
	for _, r := range o.Refs {
		i := pos[r.Field]
		pos[r.Field] = i + 1
		if i >= offersPerList {
			continue
		}
		if _, ok := l.pending[r.ID]; ok {
			// Offered again (a shared child, a friend of a friend who is a
			// friend): the first offer stands, since a breadth-first reader
			// reaches the child through the list it read first.
			continue
		}
		l.pending[r.ID] = offer{key: edgeKey{min(depth, maxContextDepth), o.Type, r.Field}, pos: i, parent: o.ID, seq: l.request}
		l.ring = append(l.ring, ringEntry{id: r.ID, seq: l.request})
	}
}

// expireLocked decides the offers older than the horizon as not followed.
func (l *Learned) expireLocked() {
	for l.head < len(l.ring) && l.request-l.ring[l.head].seq > l.cfg.Horizon {
		e := l.ring[l.head]
		l.ring[l.head] = ringEntry{}
		l.head++
		if of, ok := l.pending[e.id]; ok && of.seq == e.seq {
			delete(l.pending, e.id)
			l.decideLocked(of, false)
		}
	}
	if l.head > len(l.ring)/2 && l.head > 1024 { // compact
		l.ring = append(l.ring[:0], l.ring[l.head:]...)
		l.head = 0
	}
	for len(l.reads) > 0 && l.request-l.reads[0].seq > l.cfg.Horizon {
		if e := l.reads[0]; l.depth[e.id] >= 0 {
			delete(l.depth, e.id)
		}
		l.reads = l.reads[1:]
	}
	if l.request%l.cfg.Horizon == 0 { // once per horizon, not on every request
		for k, run := range l.lists {
			if l.request-run.request > l.cfg.Horizon {
				delete(l.lists, k)
			}
		}
	}
}

func (l *Learned) decideLocked(of offer, followed bool) {
	s := l.stats[of.key]
	if s == nil {
		s = &fieldStats{}
		l.stats[of.key] = s
	}
	b := bucket(of.pos)
	s.offered[b]++
	s.allOffered++
	if !followed {
		return
	}
	s.followed[b]++
	s.allFollowed++
	lk := listKey{of.parent, of.key.field}
	run := l.lists[lk]
	if run == nil {
		run = &listRun{}
		l.lists[lk] = run
	}
	run.followed++
	run.request = l.request
	s.maxRun = max(s.maxRun, run.followed)
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
