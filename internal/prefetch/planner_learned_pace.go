package prefetch

import (
	"math"
	"time"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Ahead implements Chooser: the levels holding the reads the application
// makes in two round trips (pace), and the least chance worth a fetch
// within them: paysBack times the cost of fetching an object of the size
// the application reads (cost) ÷ rtt, where a fetch that saves the
// application one round trip when read pays back its cost paysBack times
// over, but never below MinChance nor above Threshold. Two round trips: a level is fetched once a read's job finds it
// within reach, and must then still be a round trip's reads away when its
// fetch starts, since the one before it is still on its way (one Expand of
// the levels ahead at a time). Beyond those levels Threshold applies: there
// is time to wait for the application to get nearer, when the chances will
// be known better. Nothing is ahead before a round trip was measured.
func (l *Learned) Ahead(rtt time.Duration) (levels int, threshold float64) {
	if rtt <= 0 {
		return 0, l.cfg.Threshold
	}
	l.mu.RLock()
	reads, fanOut, size := l.pace.distance(rtt), l.pace.fanOut(), l.pace.size
	l.mu.RUnlock()
	threshold = min(max(paysBack*l.cost(size)/float64(rtt), l.cfg.MinChance), l.cfg.Threshold)
	return levelsFor(2*reads, fanOut, l.cfg.MaxDepth), threshold
}

// Distance implements Chooser.
func (l *Learned) Distance(rtt time.Duration) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pace.distance(rtt)
}

// paysBack is how many times over a fetch must be expected to pay back
// its cost (Ahead): twice, so that it still pays when its chance was
// overestimated by half. A chance is an estimate from the lists read so
// far, and a fetch at break-even gains nothing on average and adds an
// origin round trip each time it is not read: W7's large payloads at 5 ms
// (128 KiB objects, a round trip of 7.2 ms for one of them, so a break-even
// of 0.18) fetched the first child of each object read, one in six of which
// is read, in 73 to 75 origin round trips where no prefetching makes 64,
// and in 65 with the margin (docs/benchmark-history.md, "Fifteenth
// session"). Where the round trip is at least 16 times the cost, MinChance
// decides instead: from 0.24 ms for the smallest objects (15µs), 0.4 ms
// for objects of 1 KiB. W5's users are 1 KiB on average by
// graph.Object.Size, and at 0 ms (a 0.32 ms round trip) friends of friends
// fetch 3.2-3.5 objects per object read instead of 3.8, as fast or faster.
const paysBack = 2

// cost is what fetching one object of size bytes speculatively costs, in
// ns: Cost, and CostPerKiB for each KiB.
func (l *Learned) cost(size float64) float64 {
	return float64(l.cfg.Cost) + size/1024*float64(l.cfg.CostPerKiB)
}

// pace is what the learned planner measures of time and shape, to say how
// far ahead of the application speculation must be (Ahead): the time the
// application takes from one answer to its next request when it did not
// wait for the origin (its think time plus a hit's service), and how many
// objects it reads from each list it reads from (the fan-out of its walk).
type pace struct {
	last    time.Time // when the last request was answered
	gap     float64   // moving average of the time between requests that did not wait, in ns; 0: none seen
	follows float64   // follows, decayed (see fanOut)
	lists   float64   // lists followed at least once, decayed
	size    float64   // moving average of the bytes of the objects read (graph.Object.Size); 0: none read
}

// gapWeight is how much one inter-read time moves the average: it follows a
// change of think time within a few dozen reads.
const gapWeight = 1.0 / 16

// paceHalfLife is how many follows the fan-out remembers at full weight.
const paceHalfLife = 256

// answered is told that a request was answered at now, and whether it
// waited for the origin (a miss, or a join of a fetch in flight): only a
// request that did not wait says how fast the application reads, since a
// wait is the very stall speculation is to hide. A gap longer than the
// round trip counts as one round trip, so that a pause between sessions
// does not read as a slow application for the next few dozen reads.
func (p *pace) answered(now time.Time, waited bool, rtt time.Duration) {
	last := p.last
	p.last = now
	if waited || last.IsZero() {
		return
	}
	g := float64(now.Sub(last))
	if rtt > 0 {
		g = min(g, float64(rtt))
	}
	if p.gap == 0 {
		p.gap = g
		return
	}
	p.gap += (g - p.gap) * gapWeight
}

// sized is told of objects the application read: their bytes move the
// mean size with gapWeight each, so that it follows a change of what the
// application reads within a few dozen objects.
func (p *pace) sized(objs []*graph.Object) {
	for _, o := range objs {
		n := float64(o.Size())
		if p.size == 0 {
			p.size = n
			continue
		}
		p.size += (n - p.size) * gapWeight
	}
}

// followed counts a follow; first reports whether it started its list.
func (p *pace) followed(first bool) {
	p.follows++
	if first {
		p.lists++
	}
	if p.follows > 2*paceHalfLife {
		p.follows /= 2
		p.lists /= 2
	}
}

// unfollowed takes back a follow that started its list (a first read
// undone: revertFirstLocked), so that the fan-out counts only follows.
func (p *pace) unfollowed() {
	p.follows = max(p.follows-1, 0)
	p.lists = max(p.lists-1, 0)
}

// fanOut is how many objects the application reads, on average, from each
// list it reads from: 1 on a path (a chain, a choice of one branch), the
// branching factor of a tree read whole, 3 to 5 on a feed.
func (p *pace) fanOut() float64 {
	if p.lists == 0 {
		return 1
	}
	return p.follows / p.lists
}

// distance is Knafla's object distance: how many reads the application
// makes in one origin round trip, rtt ÷ its time per read. A read that
// many ahead, or nearer, must be on its way now or the application waits
// for it; 1 when nothing is known.
func (p *pace) distance(rtt time.Duration) int {
	if p.gap <= 0 || rtt <= 0 {
		return 1
	}
	return int(math.Ceil(float64(rtt) / p.gap))
}

// levelsFor converts a distance in reads to levels below the object read,
// through the fan-out: the fewest levels holding that many reads when each
// read object leads to fanOut more (a path: one level per read).
func levelsFor(reads int, fanOut float64, maxLevels int) int {
	n, width, total := 0, 1.0, 0.0
	for total < float64(reads) && n < maxLevels {
		n++
		width *= max(fanOut, 1)
		total += width
	}
	return n
}
