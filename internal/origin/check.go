package origin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// An origin is a separate program, maybe in another language, maybe
// buggy: nothing it sends reaches the cache unchecked. The checks below
// are the contract of origin.proto (an id answered once, as an object or as
// missing, only if asked for) plus the sidecar's own limits.

// answer is what a reply said of an asked-for id.
type answer int

const (
	unanswered answer = iota
	gotObject
	gotMissing
	gotRejected // an object that cannot be cached
)

func (c *Client) malformed(problem string) { c.m.OriginMalformed.WithLabelValues(problem).Inc() }

// checkObject applies the sidecar's limits to an object whose id is valid.
// A self-reference is not a problem: graphs may have them, and every
// traversal terminates on them.
func (c *Client) checkObject(o *graph.Object) error {
	for i, r := range o.Refs {
		if err := graph.ValidateID(r.ID); err != nil {
			c.malformed(metrics.MalformedInvalidRef)
			return fmt.Errorf("object %q: %w", o.ID, &graph.RefError{Index: i, Field: r.Field, Err: err})
		}
	}
	if n := o.Size(); n > c.cfg.MaxObjectBytes {
		c.malformed(metrics.MalformedOversized)
		return fmt.Errorf("object %q: %d bytes exceed the limit of %d", o.ID, n, c.cfg.MaxObjectBytes)
	}
	return nil
}

// checkBatch sorts a BatchGet reply into what may be used, counting every
// problem (see BatchGet).
func (c *Client) checkBatch(ids []string, resp *lookaheadv1.OriginServiceBatchGetResponse) (found []*graph.Object, missing []string, err error) {
	asked := make(map[string]answer, len(ids))
	for _, id := range ids {
		asked[id] = unanswered
	}
	var rejected []error
	found = make([]*graph.Object, 0, len(resp.GetObjects()))
	for _, p := range resp.GetObjects() {
		id := p.GetId()
		a, ok := asked[id]
		switch {
		case graph.ValidateID(id) != nil:
			c.malformed(metrics.MalformedInvalidID)
			continue
		case !ok:
			c.malformed(metrics.MalformedUnrequested)
			continue
		case a != unanswered:
			c.malformed(metrics.MalformedDuplicate)
			continue
		}
		o := graphpb.FromProto(p)
		if err := c.checkObject(o); err != nil {
			asked[id] = gotRejected
			rejected = append(rejected, err)
			continue
		}
		asked[id] = gotObject
		found = append(found, o)
	}
	missing = c.checkMissing(resp.GetMissingIds(), asked)
	var left []string
	for _, id := range ids {
		if asked[id] == unanswered {
			c.malformed(metrics.MalformedUnanswered)
			asked[id] = gotMissing // an id asked for twice is counted once
			left = append(left, id)
		}
	}
	if len(rejected) > 0 {
		return nil, nil, fmt.Errorf("%w: %w", ErrMalformedReply, errors.Join(rejected...))
	}
	if n := len(left); n > 0 {
		return nil, nil, fmt.Errorf("%w: %d asked %s neither sent nor listed missing: %s",
			ErrIncompleteReply, n, plural(n, "id", "ids"), quoteList(left, 5))
	}
	return found, missing, nil
}

// checkMissing keeps the missing ids of a BatchGet reply that were asked
// for and not answered otherwise, and counts the rest as malformed.
func (c *Client) checkMissing(ids []string, asked map[string]answer) (missing []string) {
	for _, id := range ids {
		a, ok := asked[id]
		switch {
		case !ok:
			c.malformed(metrics.MalformedUnrequested)
		case a == gotMissing:
			c.malformed(metrics.MalformedDuplicate)
		case a != unanswered: // sent as an object too: the object wins
			c.malformed(metrics.MalformedConflict)
		default:
			asked[id] = gotMissing
			missing = append(missing, id)
		}
	}
	return missing
}

// expandCheck follows an Expand stream: an object may come only if it is a
// root or the ref (through the requested fields) of an object already
// received or known, above the requested depth, and only once; a known
// object never comes. The stream answers at most max_objects ids, each once
// (origin.proto): one that answers more (objects and missing ids, whatever
// their fate) is cut, so that what it costs, to decode and to remember,
// is bounded by the request and not by how long the origin keeps sending.
// A message that answers nothing is bounded by the levels: a level with
// nothing to say sends at most one (docs/origin.md), so a stream may send
// depth+1 of them, and the one past that cuts it. Every other message
// answers at least one id, so a stream sends at most max_objects + depth + 1
// messages.
//
// Without max_objects, what the origin may send is whatever the graph
// holds below the roots within the depth; what it sends besides, answers
// that cannot be used (unrequested, duplicates, conflicts, invalid ids),
// is bounded by what it sends that can be: once those outnumber these, at
// the end of a message, the stream is cut (problem=flood). So it costs at
// most twice what the request allows, and one message. An origin that
// keeps to the contract sends none unless the request names known ids: the
// origin walks its own copies of those, whose refs may have changed since
// the caller's (within --ttl, or before Watch said so), and what it finds
// below them the check cannot tell from what nobody asked for. With known
// ids the sidecar therefore stops reading instead (docs/origin.md: it may
// end a stream), without counting the stop as a fault.
type expandCheck struct {
	c       *Client
	fields  map[string]bool // nil = all
	depth   int             // refs of objects at this level or below are never followed
	limit   int             // answers the stream may send; 0 = no cap
	answers int             // objects and missing ids received so far
	used    int             // of answers, those handed on: asked for, once, valid
	empty   int             // messages received with neither objects nor missing ids
	known   bool            // the request named known ids
	// stop is set when, without a limit, a stream with known ids sent more
	// answers that cannot be used than answers that can: the message
	// next returned is the last one read.
	stop bool
	// ids holds every id that may come, roots and refs of accepted objects,
	// unanswered until it comes, and then what came; an id it does not
	// hold may not come.
	ids map[string]answer
}

func (c *Client) newExpandCheck(roots []string, known []*graph.Object, b graph.Budget) *expandCheck {
	n := b.SizeHint(len(roots) + len(known))
	x := &expandCheck{c: c, ids: make(map[string]answer, n), depth: b.Depth, limit: b.MaxObjects, known: len(known) > 0}
	for _, r := range roots {
		x.ids[r] = unanswered
	}
	if len(b.Fields) > 0 {
		x.fields = make(map[string]bool, len(b.Fields))
		for _, f := range b.Fields {
			x.fields[f] = true
		}
	}
	for _, o := range known {
		x.ids[o.ID] = gotObject // sent anyway: a duplicate
		x.follow(o)
	}
	return x
}

// follow makes the refs of o through the requested fields reachable.
func (x *expandCheck) follow(o *graph.Object) {
	for _, r := range o.Refs {
		if x.fields == nil || x.fields[r.Field] {
			// One map operation per ref: adds the id as unanswered (the
			// zero answer) when it is new, keeps its answer when it is not.
			x.ids[r.ID] |= unanswered
		}
	}
}

// next checks one message of the stream, keeping its objects that may be
// used and its missing ids in place.
func (x *expandCheck) next(m *expandReply) (objs []*graph.Object, missing []string, err error) {
	c := x.c
	if len(m.objs)+len(m.missing) == 0 {
		x.empty++
		if x.empty-1 > x.depth { // one for each level, 0 to depth
			c.malformed(metrics.MalformedEmpty)
			return nil, nil, fmt.Errorf("%w: expand stream sent %d messages with neither objects nor missing ids, more than one for each of the %d levels of its depth %d",
				ErrMalformedReply, x.empty, x.depth+1, x.depth)
		}
	}
	x.answers += len(m.objs) + len(m.missing)
	if x.limit > 0 && x.answers > x.limit {
		c.malformed(metrics.MalformedBeyondBudget)
		return nil, nil, fmt.Errorf("%w: expand stream answered %d ids (objects and missing ids), more than its max_objects %d",
			ErrMalformedReply, x.answers, x.limit)
	}
	deeper := int64(m.level) < int64(x.depth) // refs of m's objects may come
	objs = m.objs[:0]
	for _, o := range m.objs {
		a, ok := x.ids[o.ID]
		switch {
		case graph.ValidateID(o.ID) != nil:
			c.malformed(metrics.MalformedInvalidID)
			continue
		case !ok:
			c.malformed(metrics.MalformedUnrequested)
			continue
		case a != unanswered:
			c.malformed(metrics.MalformedDuplicate)
			continue
		}
		x.ids[o.ID] = gotObject
		if err := c.checkObject(o); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrMalformedReply, err)
		}
		if deeper {
			x.follow(o)
		}
		objs = append(objs, o)
	}
	missing = m.missing[:0]
	for _, id := range m.missing {
		switch a, ok := x.ids[id]; {
		case !ok:
			c.malformed(metrics.MalformedUnrequested)
		case a == gotMissing:
			c.malformed(metrics.MalformedDuplicate)
		case a == gotObject:
			c.malformed(metrics.MalformedConflict)
		default:
			x.ids[id] = gotMissing
			missing = append(missing, id)
		}
	}
	if err := x.unusable(len(objs) + len(missing)); err != nil {
		return nil, nil, err
	}
	return objs, missing, nil
}

// unusable counts used, the answers of the message just checked that are
// handed on, and bounds, for a stream without a limit, the answers that
// cannot be used by those that can (see expandCheck).
func (x *expandCheck) unusable(used int) error {
	x.used += used
	if x.limit > 0 || x.answers-x.used <= x.used {
		return nil
	}
	if x.known {
		x.stop = true
		return nil
	}
	x.c.malformed(metrics.MalformedFlood)
	return fmt.Errorf("%w: expand stream without max_objects answered %d ids of which %d could not be used (unrequested, duplicates, conflicts, invalid ids), more than the %d that could",
		ErrMalformedReply, x.answers, x.answers-x.used, x.used)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quoteList quotes the first max ids and says how many more there are.
func quoteList(ids []string, max int) string {
	var b strings.Builder
	for i, id := range ids {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(ids)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(id))
	}
	return b.String()
}
