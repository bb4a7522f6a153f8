package bench

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// W5Config sizes W5, a skewed social graph (graph.Social) read object by
// object in three access patterns.
type W5Config struct {
	Users, MaxFriends, PayloadBytes int
	LatenciesMS                     []int // one-way latency of the proxy, one table each
	Reps                            int
	// Friends of friends: FoFStarts users, each with a two-hop neighbourhood
	// of FoFMin to FoFMax users, read with every friend and friend's friend.
	FoFStarts, FoFMin, FoFMax int
	// FoFReaders > 1 adds the pattern read by that many readers at once,
	// each reading FoFStarts sessions of its own through the one sidecar
	// connection (a service's handlers, side by side).
	FoFReaders int
	// Feed: FeedStarts users, their first FeedFriends friends and each
	// friend's first FeedPosts posts.
	FeedStarts, FeedFriends, FeedPosts int
	// Hot spot: HotVisits profile views of users drawn by a Zipf law over
	// friend count (the most followed most often), each reading the user,
	// its first HotPosts posts and first HotFriends friends.
	HotVisits, HotPosts, HotFriends int
	// Statics is the grid of static settings searched for the best static
	// row; every point runs like the other rows.
	Statics []W5Static
	// Patterns names the patterns to run, as in the report; empty runs all.
	// A pattern draws the same sessions whichever others run with it.
	Patterns []string
}

// W5Static is one static prefetch setting of the grid.
type W5Static struct{ Depth, MaxObjects int }

// ParseW5Grid reads a grid written "DEPTH/MAX,DEPTH/MAX", e.g. "1/100,2/200".
func ParseW5Grid(s string) ([]W5Static, error) {
	var grid []W5Static
	for _, p := range strings.Split(s, ",") {
		d, m, ok := strings.Cut(strings.TrimSpace(p), "/")
		depth, derr := strconv.Atoi(d)
		maxObjects, merr := strconv.Atoi(m)
		if !ok || derr != nil || merr != nil || depth < 0 || maxObjects < 0 {
			return nil, fmt.Errorf("static grid point %q: want DEPTH/MAX_OBJECTS, e.g. 1/100", p)
		}
		grid = append(grid, W5Static{Depth: depth, MaxObjects: maxObjects})
	}
	return grid, nil
}

func (s W5Static) name() string {
	return fmt.Sprintf("static depth %d, max %d", s.Depth, s.MaxObjects)
}

// w5SidecarRows are the sidecar settings W5 compares, besides the static
// grid (W5Config.Statics) and the batched-client peer. Change a row's flags
// here to rerun W5 with another default mode or scheduler: "default" runs
// the sidecar with no prefetch flag at all.
var w5SidecarRows = []w5Row{
	{Name: "off", Args: []string{"--prefetch-mode", "off"}},
	{Name: "default", Args: []string{}}, // adaptive
	{Name: "static defaults", Args: []string{"--prefetch-mode", "static"}},
}

// w5Row is one configuration of W5.
type w5Row struct {
	Name    string
	Args    []string // sidecar flags
	Batched bool     // the DataLoader-style peer, no sidecar
	Static  bool     // a point of the static grid
	NA      string   // not run, and why
}

func (w *w5) rows() []w5Row {
	return append(gridRows(w5SidecarRows, w.cfg.Statics, w.e.adaptive), w5Row{Name: "peer: batched client", Batched: true})
}

// w5Step picks, from an object just read, the ids the application reads
// next.
type w5Step func(*lookaheadv1.Object) []string

// firstRefs reads the first n refs of field (all when n is 0), in the
// object's order: most recent first.
func firstRefs(field string, n int) w5Step {
	return func(o *lookaheadv1.Object) []string {
		var ids []string
		for _, r := range o.GetRefs() {
			if r.GetField() == field && (n == 0 || len(ids) < n) {
				ids = append(ids, r.GetId())
			}
		}
		return ids
	}
}

func bothSteps(a, b w5Step) w5Step {
	return func(o *lookaheadv1.Object) []string { return append(a(o), b(o)...) }
}

// w5Session is one unit of application work: read Starts, then level by
// level the ids each step picks from the objects of the level before, each
// object once per session.
type w5Session struct {
	Starts []string
	Steps  []w5Step
}

// w5Pattern is an access pattern: the sessions one run performs.
type w5Pattern struct {
	Name     string
	sessions func(rng *rand.Rand) []w5Session
	readers  int    // reading the sessions at once, each its share; 0 = 1
	seed     uint64 // its place among all patterns: seeds its sessions' draw
}

type w5Sample struct {
	Wall       time.Duration
	RoundTrips float64
	Fetched    float64 // objects received from the origin
	Used       int     // distinct objects the application read
	PeakRSS    int64   // the sidecar's VmHWM; 0 for the peer
	// CPU is the sidecar's CPU time over the run (all its threads): what
	// its speculation costs the cores it shares with the application; 0
	// for the peer.
	CPU time.Duration
	// Planning is the learned planner's share of it, as its own metric
	// says (lookahead_prefetch_planning_seconds_total, wall time): learning
	// from reads and choosing what to fetch; 0 for the other rows.
	Planning time.Duration
}

type w5Cell struct {
	Row     w5Row
	Samples []w5Sample
}

func (c *w5Cell) med(f func(w5Sample) float64) float64 { return medianOf(c.Samples, f) }

func (c *w5Cell) wall() time.Duration {
	return time.Duration(c.med(func(s w5Sample) float64 { return float64(s.Wall) }))
}

// w5Latency is W5 at one latency: Cells[pattern][row].
type w5Latency struct {
	LatencyMS int
	RTT       time.Duration
	Patterns  []string
	Cells     [][]*w5Cell
}

type w5Result struct {
	Cfg       W5Config
	Objects   int
	Hubs      []int // friend counts of users with 1,000 or more
	Latencies []w5Latency
}

type w5 struct {
	e      *env
	cfg    W5Config
	origin *origin
	byID   map[string]*graph.Object
	users  []string // by friend count, most first
}

func runW5(ctx context.Context, e *env, cfg W5Config) (*w5Result, error) {
	w := &w5{e: e, cfg: cfg, byID: map[string]*graph.Object{}}
	gen := graph.Social{Users: cfg.Users, MaxFriends: cfg.MaxFriends, DanglingRate: 0.001, PayloadBytes: cfg.PayloadBytes, Seed: 1}
	if err := gen.Generate(func(o *graph.Object) error { w.byID[o.ID] = o; return nil }); err != nil {
		return nil, err
	}
	res := &w5Result{Cfg: cfg, Objects: len(w.byID)}
	for i := range cfg.Users {
		w.users = append(w.users, graph.UserID(i))
	}
	slices.SortStableFunc(w.users, func(a, b string) int { return w.friendCount(b) - w.friendCount(a) })
	for _, u := range w.users {
		if n := w.friendCount(u); n >= 1000 {
			res.Hubs = append(res.Hubs, n)
		}
	}
	e.progress("w5: starting origin with a social graph of %d users, %d objects, hubs of %v friends", cfg.Users, res.Objects, res.Hubs)
	o, err := e.startOrigin(ctx, "w5", "--seed", "social", "--social-users", strconv.Itoa(cfg.Users),
		"--social-max-friends", strconv.Itoa(cfg.MaxFriends), "--social-dangling", "0.001",
		"--payload-bytes", strconv.Itoa(cfg.PayloadBytes), "--dataset-seed", "1")
	if err != nil {
		return nil, err
	}
	defer o.stop()
	w.origin = o
	patterns, err := w.selected()
	if err != nil {
		return nil, err
	}
	g := grid{name: "w5", origin: o, latencies: cfg.LatenciesMS, reps: cfg.Reps, rows: w.rows(),
		prepare: func(rep, pi int) func(context.Context, w5Row) (w5Sample, error) {
			p := patterns[pi]
			sessions := p.sessions(rand.New(rand.NewPCG(uint64(rep), uint64(p.seed))))
			return func(ctx context.Context, r w5Row) (w5Sample, error) { return w.run(ctx, r, sessions, p.readers) }
		}}
	for _, p := range patterns {
		g.patterns = append(g.patterns, p.Name)
	}
	if res.Latencies, err = e.runGrid(ctx, g); err != nil {
		return nil, err
	}
	return res, nil
}

func (w *w5) friendCount(id string) int {
	n := 0
	for _, r := range w.byID[id].Refs {
		if r.Field == graph.FieldFriends && !strings.HasPrefix(r.ID, graph.DeletedPrefix) {
			n++
		}
	}
	return n
}

// twoHop is the number of distinct users within two friendships of u.
func (w *w5) twoHop(u string) int {
	seen := map[string]bool{u: true}
	for _, f := range w.byID[u].Refs {
		if f.Field != graph.FieldFriends || w.byID[f.ID] == nil {
			continue
		}
		seen[f.ID] = true
		for _, ff := range w.byID[f.ID].Refs {
			if ff.Field == graph.FieldFriends {
				seen[ff.ID] = true
			}
		}
	}
	return len(seen)
}

// selected is the patterns cfg.Patterns names, in their usual order.
func (w *w5) selected() ([]w5Pattern, error) {
	all := w.patterns()
	for i := range all {
		all[i].seed = uint64(i)
	}
	return selectNamed(all, w.cfg.Patterns, func(p w5Pattern) string { return p.Name })
}

func (w *w5) patterns() []w5Pattern {
	c := w.cfg
	friends := firstRefs(graph.FieldFriends, 0)
	fof := func(n int) func(rng *rand.Rand) []w5Session {
		return func(rng *rand.Rand) []w5Session {
			var out []w5Session
			for _, i := range rng.Perm(len(w.users)) {
				u := w.users[i]
				if t := w.twoHop(u); t >= c.FoFMin && t <= c.FoFMax {
					out = append(out, w5Session{Starts: []string{u}, Steps: []w5Step{friends, friends}})
				}
				if len(out) == n {
					break
				}
			}
			return out
		}
	}
	patterns := []w5Pattern{
		{Name: "friends of friends", sessions: fof(c.FoFStarts)},
		{Name: "feed", sessions: func(rng *rand.Rand) []w5Session {
			var out []w5Session
			for _, i := range rng.Perm(len(w.users)) {
				if u := w.users[i]; w.friendCount(u) > 0 {
					out = append(out, w5Session{Starts: []string{u},
						Steps: []w5Step{firstRefs(graph.FieldFriends, c.FeedFriends), firstRefs(graph.FieldPosts, c.FeedPosts)}})
				}
				if len(out) == c.FeedStarts {
					break
				}
			}
			return out
		}},
		{Name: "hot spot", sessions: func(rng *rand.Rand) []w5Session {
			z := rand.NewZipf(rng, 1.1, 1, uint64(len(w.users)-1))
			out := make([]w5Session, c.HotVisits)
			for i := range out {
				out[i] = w5Session{Starts: []string{w.users[z.Uint64()]},
					Steps: []w5Step{bothSteps(firstRefs(graph.FieldPosts, c.HotPosts), firstRefs(graph.FieldFriends, c.HotFriends))}}
			}
			return out
		}},
	}
	if c.FoFReaders > 1 {
		patterns = append(patterns, w5Pattern{Name: w5ReadersName(c.FoFReaders), sessions: fof(c.FoFReaders * c.FoFStarts), readers: c.FoFReaders})
	}
	return patterns
}

// w5ReadersName is the name of friends of friends read by n readers at once.
func w5ReadersName(n int) string { return fmt.Sprintf("friends of friends by %d readers", n) }

// w5Fetch reads a level of ids; objects that do not exist are left out.
type w5Fetch func(ctx context.Context, ids []string) ([]*lookaheadv1.Object, error)

// readAtOnce performs the sessions with fetch, dealt round-robin to
// readers that read at once, and returns the distinct objects read.
func readAtOnce(ctx context.Context, sessions []w5Session, readers int, fetch w5Fetch) (map[string]bool, error) {
	if readers <= 1 {
		return readSessions(ctx, sessions, fetch)
	}
	used := make([]map[string]bool, readers)
	g, ctx := errgroup.WithContext(ctx)
	for r := range readers {
		var mine []w5Session
		for i := r; i < len(sessions); i += readers {
			mine = append(mine, sessions[i])
		}
		g.Go(func() (err error) {
			used[r], err = readSessions(ctx, mine, fetch)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	all := map[string]bool{}
	for _, u := range used {
		maps.Copy(all, u)
	}
	return all, nil
}

// readSessions performs the sessions with fetch and returns the distinct
// objects read.
func readSessions(ctx context.Context, sessions []w5Session, fetch w5Fetch) (map[string]bool, error) {
	used := map[string]bool{}
	for _, s := range sessions {
		seen := map[string]bool{}
		level := s.Starts
		for step := 0; len(level) > 0; step++ {
			objs, err := fetch(ctx, level)
			if err != nil {
				return nil, err
			}
			level = nil
			for _, o := range objs {
				used[o.GetId()] = true
				seen[o.GetId()] = true
				if step < len(s.Steps) {
					for _, id := range s.Steps[step](o) {
						if !seen[id] {
							seen[id] = true
							level = append(level, id)
						}
					}
				}
			}
		}
	}
	return used, nil
}

func (w *w5) run(ctx context.Context, r w5Row, sessions []w5Session, readers int) (w5Sample, error) {
	if r.Batched {
		return w.runPeer(ctx, sessions, readers)
	}
	return w.runSidecar(ctx, r, sessions, readers)
}

func (w *w5) runSidecar(ctx context.Context, r w5Row, sessions []w5Session, readers int) (w5Sample, error) {
	return w.e.measureSidecar(ctx, w.origin.Addr(), r.Args, func(ctx context.Context, sc *sidecar) (int, error) {
		used, err := readAtOnce(ctx, sessions, readers, getEach(sc))
		return len(used), err
	})
}

// runPeer is the DataLoader-style client: no sidecar, one origin BatchGet
// per level of a session (what one tick of the application asks for),
// nothing kept between sessions.
func (w *w5) runPeer(ctx context.Context, sessions []w5Session, readers int) (s w5Sample, err error) {
	p, err := dialOrigin(w.origin.Addr())
	if err != nil {
		return s, err
	}
	defer p.close()
	start := time.Now()
	used, err := readAtOnce(ctx, sessions, readers, func(ctx context.Context, ids []string) ([]*lookaheadv1.Object, error) {
		objs, _, err := p.batchGetSome(ctx, ids)
		return objs, err
	})
	if err != nil {
		return s, err
	}
	s.Wall = time.Since(start)
	s.Used = len(used)
	s.RoundTrips, s.Fetched = float64(p.roundTrips), float64(p.objects)
	return s, nil
}
