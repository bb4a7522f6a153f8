package prefetch

import (
	"math"
	"sync"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// AdaptiveConfig tunes the adaptive planner. Zero values take the defaults.
type AdaptiveConfig struct {
	MinDepth, MaxDepth int     // bounds of the learned depth; defaults 1 and 8
	MaxObjects         int     // objects one expansion may fetch; default 1000
	Alpha              float64 // weight of a new sample in the moving averages; default 0.2
	// MinFieldShare: a ref field of a type is prefetched once applications
	// follow at least this share of its refs; default 0.2.
	MinFieldShare float64
	// MinFieldSamples: refs of a field whose fate is known (followed, or
	// forgotten unfollowed) before its share is trusted; default 20. Until
	// then every field is followed. A breadth-first walk follows a ref long
	// after it was offered, so refs still pending do not count.
	MinFieldSamples int
	// LowAccuracy and HighAccuracy: below the first, the depth backs off a
	// level; above the second it recovers one; defaults 0.3 and 0.7, judged
	// every AccuracyWindow speculative objects (default 256).
	LowAccuracy, HighAccuracy float64
	AccuracyWindow            int
	// IdleGap: a pause between requests longer than this is the application
	// being idle, not processing, and is not sampled; default 1s.
	IdleGap time.Duration
	// RefMemory bounds the refs remembered to learn which fields are
	// followed; a ref forgotten unfollowed counts as not followed; default
	// 65536.
	RefMemory int
}

func (c *AdaptiveConfig) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MinDepth, 1)
	def(&c.MaxDepth, 8)
	def(&c.MaxObjects, 1000)
	def(&c.MinFieldSamples, 20)
	def(&c.AccuracyWindow, 256)
	def(&c.RefMemory, 1<<16)
	if c.Alpha == 0 {
		c.Alpha = 0.2
	}
	if c.MinFieldShare == 0 {
		c.MinFieldShare = 0.2
	}
	if c.LowAccuracy == 0 {
		c.LowAccuracy = 0.3
	}
	if c.HighAccuracy == 0 {
		c.HighAccuracy = 0.7
	}
	if c.IdleGap == 0 {
		c.IdleGap = time.Second
	}
}

// Adaptive is the planner that needs no settings. It measures the cost of
// an origin round trip (C_fetch) and the application's time between requests
// (C_process) and prefetches POD = C_fetch / C_process levels ahead: Knafla's
// prefetch object distance, read as levels because a walk moves down one
// level per request along the path it takes. It learns, per object type,
// which ref fields applications actually follow and prefetches only those,
// and it backs off a level while the share of prefetched objects that get
// used stays low.
//
// The averages are over all of the sidecar's applications at once: several
// concurrent walkers shorten the measured gap between requests and so deepen
// the prefetch, which is what several walkers sharing one origin need.
type Adaptive struct {
	cfg AdaptiveConfig

	mu       sync.Mutex                   // guards the fields below
	fetch    ewma                         // origin round trip, seconds
	process  ewma                         // gap between application requests, seconds
	last     time.Time                    // when the last request was answered
	backoff  int                          // levels taken off the POD for low accuracy
	issued   int                          // speculative objects in the current accuracy window
	used     int                          // of the window's speculation, used
	fields   map[string]map[string]*share // type → field → how often followed
	refs     map[string]edge              // child id → how it was offered; two generations
	oldRefs  map[string]edge
	hasField map[string]bool // types whose field shares are trusted yet
}

type ewma struct {
	v  float64
	ok bool
}

func (e *ewma) add(x, alpha float64) {
	if !e.ok {
		e.v, e.ok = x, true
		return
	}
	e.v += alpha * (x - e.v)
}

// share is what became of the refs of one field of one type.
type share struct{ pending, followed, expired int }

type edge struct{ typ, field string }

// NewAdaptive makes an adaptive planner.
func NewAdaptive(cfg AdaptiveConfig) *Adaptive {
	cfg.setDefaults()
	return &Adaptive{cfg: cfg, fields: map[string]map[string]*share{},
		refs: map[string]edge{}, oldRefs: map[string]edge{}, hasField: map[string]bool{}}
}

// Depth is the depth the planner would use now.
func (a *Adaptive) Depth() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.depthLocked()
}

func (a *Adaptive) depthLocked() int {
	d := a.cfg.MinDepth + 1 // nothing measured yet: a modest default
	if a.fetch.ok && a.process.ok {
		if a.process.v <= 0 {
			d = a.cfg.MaxDepth
		} else {
			d = int(math.Ceil(a.fetch.v / a.process.v))
		}
	}
	return min(max(d-a.backoff, a.cfg.MinDepth), a.cfg.MaxDepth)
}

// Budget implements Planner.
func (a *Adaptive) Budget(roots []*graph.Object, h Hint) graph.Budget {
	a.mu.Lock()
	b := graph.Budget{Depth: a.depthLocked(), MaxObjects: a.cfg.MaxObjects}
	if len(roots) > 0 {
		b.Fields = a.fieldsLocked(roots[0].Type)
	}
	a.mu.Unlock()
	return h.apply(b)
}

// fieldsLocked returns the fields of typ worth following, or nil (all) while
// too little is known.
func (a *Adaptive) fieldsLocked(typ string) []string {
	if !a.hasField[typ] {
		return nil
	}
	var out []string
	for f, s := range a.fields[typ] {
		decided := s.followed + s.expired
		if decided < a.cfg.MinFieldSamples || float64(s.followed)/float64(decided) >= a.cfg.MinFieldShare {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		// Nothing is followed: an empty list would mean "all", so name a
		// field that cannot exist.
		return []string{"\x00none"}
	}
	return out
}

// ObserveRoundTrip implements Observer.
func (a *Adaptive) ObserveRoundTrip(d time.Duration) {
	a.mu.Lock()
	a.fetch.add(d.Seconds(), a.cfg.Alpha)
	a.mu.Unlock()
}

// ObserveRequest implements Observer: one application request that arrived
// at start, was answered at end and received objs. The application's
// processing time is the gap from the previous answer to this request: the
// sidecar's own time, a miss included, is not the application's.
func (a *Adaptive) ObserveRequest(objs []*graph.Object, start, end time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() {
		if gap := start.Sub(a.last); gap >= 0 && gap <= a.cfg.IdleGap {
			a.process.add(gap.Seconds(), a.cfg.Alpha)
		}
	}
	a.last = end
	for _, o := range objs {
		// Was o reached through a ref of an object served before?
		if e, ok := a.takeRef(o.ID); ok {
			s := a.fields[e.typ][e.field]
			s.pending--
			s.followed++
			a.decidedLocked(e.typ, s)
		}
		for _, r := range o.Refs {
			a.offerLocked(o.Type, r)
		}
	}
}

func (a *Adaptive) takeRef(id string) (edge, bool) {
	if e, ok := a.refs[id]; ok {
		delete(a.refs, id)
		return e, true
	}
	if e, ok := a.oldRefs[id]; ok {
		delete(a.oldRefs, id)
		return e, true
	}
	return edge{}, false
}

// offerLocked remembers that r was offered by an object of type typ.
func (a *Adaptive) offerLocked(typ string, r graph.Ref) {
	byField := a.fields[typ]
	if byField == nil {
		byField = map[string]*share{}
		a.fields[typ] = byField
	}
	s := byField[r.Field]
	if s == nil {
		s = &share{}
		byField[r.Field] = s
	}
	if old, ok := a.takeRef(r.ID); ok { // offered again: the newer offer counts
		a.fields[old.typ][old.field].pending--
	}
	if len(a.refs) >= a.cfg.RefMemory/2 {
		// Bounded memory, two generations: what the oldest generation still
		// holds was offered long ago and never followed.
		for _, e := range a.oldRefs {
			es := a.fields[e.typ][e.field]
			es.pending--
			es.expired++
			a.decidedLocked(e.typ, es)
		}
		a.oldRefs, a.refs = a.refs, make(map[string]edge, len(a.refs))
	}
	s.pending++
	a.refs[r.ID] = edge{typ, r.Field}
}

func (a *Adaptive) decidedLocked(typ string, s *share) {
	if s.followed+s.expired >= a.cfg.MinFieldSamples {
		a.hasField[typ] = true
	}
}

// ObservePrefetch implements Observer: issued objects were fetched
// speculatively, used prefetched objects were requested.
func (a *Adaptive) ObservePrefetch(issued, used int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.issued += issued
	a.used += used
	if a.issued < a.cfg.AccuracyWindow {
		return
	}
	acc := float64(a.used) / float64(a.issued)
	switch {
	case acc < a.cfg.LowAccuracy && a.backoff < a.cfg.MaxDepth-a.cfg.MinDepth:
		a.backoff++
	case acc > a.cfg.HighAccuracy && a.backoff > 0:
		a.backoff--
	}
	a.issued, a.used = 0, 0
}
