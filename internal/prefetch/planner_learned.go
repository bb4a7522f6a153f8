package prefetch

import (
	"math/bits"
	"sync"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Learned is the planner that needs no settings. It learns, per object type,
// ref field and position in the field's list, the probability that an
// application that read an object goes on to read the object a ref points
// to, and the scheduler fetches only what is likely enough to be read
// (Chooser). Hubs are read the way applications read them: in list order, a
// few at a time (TAO reads associations the same way), so a position far
// down a list is only fetched once applications are seen to read that far.
//
// The model: fetching a ref speculatively costs the same whether or not it
// is read (origin work, bytes, CPU on the cores the sidecar shares with the
// application, cache room: Cost, and CostPerKiB for each KiB of the objects
// the application reads, on average), and saves the application a round trip
// only if it is read. With p the probability that it is, a prefetch pays
// when p × round trip > Cost. When it pays depends on when the object is
// due. The application makes rtt ÷ its time per read reads in one round
// trip (Knafla's object distance; its time per read is measured between
// requests that did not wait for the origin), which through the fan-out of
// its walk (objects read per list read from) are a number of levels below
// the object it just read; Ahead takes the levels of two round trips' reads,
// since a fetch must start a round trip before its object is due and the
// one before it is still on its way. An object within them that is not on
// its way now will be waited for, so it is fetched when p reaches twice
// Cost ÷ rtt (paysBack: the chance is an estimate),
// but not below MinChance (the bound on what wrong estimates waste); an
// object further down is not due before the application comes nearer, when
// its chance is known better (the branch taken), and is fetched now only
// when p reaches Threshold (1/2, where a prefetch that pays covers one that
// does not). A path that branches in two every few objects (Knafla's pages)
// is fetched two round trips' worth of reads ahead, all branches to 1/8;
// a hub's list, whose refs beyond what was seen read have chance 0, is not.
//
// Evidence: a ref is offered when the object holding it is answered, and
// followed when the object it points to is requested later, from that list
// in list order, passing by at most one unread ref (inOrderLocked), from
// the list of the object read from last when several could claim it
// (claimLocked); an object read again at another depth moves its lists
// there (rereadLocked); an offer not followed within Horizon requests
// counts as not followed, and so, until a later read comes back to them, do
// the lists a reader going level by level has passed by (closeLocked) and
// the refs of a list before one read out of order (passedOverLocked). A
// read that could be a list's first follow but goes on with its own lists
// was a direct request when its field is seen followed less than Prior
// beyond chance (checkFirstLocked). The list the application is reading, of
// a field whose lists are read to their end more often than left with refs
// unread, is fetched past the longest run seen, at the run's Copernican
// continuation (listChances.beyond). A position's estimate borrows strength
// from its field's, and the field's from Prior, so that one read of the
// first friend already says something about the second; a field nothing is
// known about at one depth borrows from the depths above when they were
// read as a tree's (treeLikeLocked).
//
// What a read returns to be expanded again (Read's parents): the list a
// follow came from only when the follow can have changed what that list's
// job fetches (movedLocked); when a list was read to its end with nothing
// known of its field one level down, the objects it led to whose lists now
// borrow its evidence (belowLocked); and on a field's first follow at a
// depth, the objects read shallower whose lists of it have refs unread,
// whose jobs found nothing likely at that depth (aboveLocked).
type Learned struct {
	cfg LearnedConfig

	mu       sync.RWMutex             // Chances and Depth, on the workers, only read
	stats    map[edgeKey]*fieldStats  // guarded by mu
	shows    map[fieldKey]*followShow // what each field's follows show, at every depth (fieldStats.shown); guarded by mu
	offers   map[string]*childOffers  // child id → the lists offering it; guarded by mu
	ring     fifo[offerEntry]         // offers in request order, for the horizon; guarded by mu
	renewed  int                      // ring entries of renewed offers (renewsLocked); guarded by mu
	directs  int                      // objects read as direct requests, not follows; guarded by mu
	request  int                      // requests observed; guarded by mu
	lists    map[listKey]*listRun     // lists being read: parent and field; guarded by mu
	depth    map[string]readDepth     // depth at which recently read objects were read; guarded by mu
	reads    []ringEntry              // reads in request order, to forget depth; guarded by mu
	open     openLists                // read objects with lists not yet followed; guarded by mu
	first    *firstRead               // the last read, when it was a list's first; guarded by mu
	walk     map[string]string        // ids read since the last direct request → the list they were read from; guarded by mu
	walked   []string                 // walk's ids, in read order; guarded by mu
	over     []passOver               // lists the request's reads passed over (passedOverLocked); guarded by mu
	walks    map[string]walkSpan      // root of each walk → when it read (besideLocked); guarded by mu
	lastRoot string                   // the walk of the last object read; guarded by mu
	pace     pace                     // guarded by mu
	refLists []refList                // listsOf's, reused; guarded by mu
	refIndex fieldIndex               // refLists' fields; guarded by mu
	rtt      time.Duration            // the demand round trip Read was last told of; guarded by mu
	now      func() time.Time         // the clock; tests set it
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

// maxStats bounds the statistics kept, one per type, field and depth:
// applications' objects have tens of those, objects whose types or fields
// are made up as they go (a hostile origin's) would grow them without end.
// Past it, offers of keys not yet seen are not counted: nothing is learned
// of them, and their refs keep chance 0.
const maxStats = 4096

type listKey struct{ parent, field string }

// listRun is what was read of one parent's list.
type listRun struct {
	followed int
	request  int  // when it was last followed
	last     int  // the furthest offer followed, by its idx
	ended    bool // its last ref was followed
	armed    int  // followed, when its job was last asked for, plus the reads of two round trips then
	armedAt  int  // the position bucket of last then
	likely   bool // and whether its refs due then were likely (fetchedPastLocked)
}

// fieldStats are the decided offers of one type's ref field, by position
// bucket, and the longest run read from one list.
type fieldStats struct {
	offered, followed [buckets]float64
	allOffered        float64
	allFollowed       float64
	maxRun            int
	// ended: a list was read to its last ref; cyclic: a list pointed back
	// at an object already read. Lists read to their end and never back
	// are a tree's (see treeLikeLocked).
	ended, cyclic bool
	// ends and stops count the lists read to their end and those left with
	// refs unread (see readsToEndLocked).
	ends, stops float64
	lists       float64     // lists followed at least once (see estimate)
	show        *followShow // its field's, shared by every depth
}

type offer struct {
	key    edgeKey // key.depth is the parent's
	pos    int
	last   bool // the list's last ref
	back   bool // the list points at an object read before it
	parent string
	list   *openList // the parent's offers
	idx    int       // of this one among them
	seq    int       // request at which it was offered (its list's read: closeLocked)
	// due is the request of its entry in the ring: seq, or when it was
	// last renewed; renewals, how many horizons it has waited past the
	// first (renewsLocked).
	due, renewals int
}

// ringEntry is a read in request order.
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
	return min(1+bits.Len(uint(pos)), buckets-1) // 2 + ⌊log2 pos⌋
}

// NewLearned makes a learned planner.
func NewLearned(cfg LearnedConfig) *Learned {
	cfg.setDefaults()
	return &Learned{cfg: cfg, stats: map[edgeKey]*fieldStats{}, shows: map[fieldKey]*followShow{}, offers: map[string]*childOffers{},
		lists: map[listKey]*listRun{}, depth: map[string]readDepth{}, walk: map[string]string{}, walks: map[string]walkSpan{}, now: time.Now}
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
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.depth[id].depth
}

// readDepth is the depth an object was last read at, and the request that
// read it.
type readDepth struct{ depth, seq int }

// ReadAt implements Chooser: objs were answered to one request at time at.
// Each is a follow of the ref that offered it, if the application reads
// that list in order (inOrderLocked), and otherwise a direct request; its
// own refs are offered in turn. It returns the ids of objects whose lists became likelier
// to be read: the parents the request read from and, when a field was seen
// read further than ever, the objects read before whose lists of it wait
// (peersLocked).
func (l *Learned) ReadAt(at time.Time, objs []*graph.Object, waited bool, rtt time.Duration) (parents []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rtt = rtt
	l.pace.answered(at, waited, rtt)
	l.pace.sized(objs)
	l.request++
	l.expireLocked()
	started := false // a walk: direct requests start one
	var group *readGroup
	if len(objs) > 1 {
		group = &readGroup{}
	}
	for _, o := range objs {
		d, from, root := 0, "", l.rootLocked(o.ID) // asked for directly
		of, ok := l.claimLocked(o.ID)
		l.checkFirstLocked(&of, ok)
		if ok {
			from, root = of.parent, of.list.root
			if l.lists[listKey{of.parent, of.key.field}] == nil {
				l.readFirstLocked(o.ID, of)
			}
			parents = l.followLocked(of, parents)
			d = of.key.depth + 1
		}
		if d == 0 && !started {
			l.startWalkLocked()
			started = true
		}
		if d == 0 {
			l.directs++
		}
		l.walkRead(o.ID, from)
		l.walkedLocked(root)
		l.lastRoot = root
		if old, read := l.depth[o.ID]; read && old.depth != d {
			l.rereadLocked(o.ID, d)
		}
		l.depth[o.ID] = readDepth{d, l.request}
		l.reads = append(l.reads, ringEntry{id: o.ID, seq: l.request})
		l.offerLocked(o, d, root, group)
	}
	l.passedOverLocked()
	return dedupe(parents)
}

// Read is ReadAt for a request answered now, by the planner's clock.
func (l *Learned) Read(objs []*graph.Object, waited bool, rtt time.Duration) (parents []string) {
	return l.ReadAt(l.now(), objs, waited, rtt)
}

// decideLocked counts an offer as followed or not, and reports whether a
// follow made the longest run read from one list of its field longer.
func (l *Learned) decideLocked(of offer, followed bool) (longer bool) {
	s := l.stats[of.key]
	if s == nil {
		if len(l.stats) >= maxStats {
			return false // see maxStats
		}
		s = &fieldStats{show: l.showLocked(of.key.typ, of.key.field)}
		l.stats[of.key] = s
	}
	b := bucket(of.pos)
	s.offered[b]++
	s.allOffered++
	if !followed {
		return false
	}
	s.followed[b]++
	s.allFollowed++
	s.ended = s.ended || of.last
	s.cyclic = s.cyclic || of.back
	lk := listKey{of.parent, of.key.field}
	run := l.lists[lk]
	if run == nil {
		run = &listRun{}
		l.lists[lk] = run
	}
	run.followed++
	run.request = l.request
	run.last = max(run.last, of.idx)
	if of.last && !run.ended {
		run.ended = true
		s.ends++
	}
	s.show.follows++
	switch {
	case run.followed == 1:
		s.lists++
		if l.request-of.seq <= quickFollow {
			s.show.quick++
		}
	case run.followed == 2:
		s.show.runs++
	}
	l.pace.followed(run.followed == 1)
	if run.followed > s.maxRun {
		s.maxRun = run.followed
		return true
	}
	return false
}
