package originserver

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Expand implements lookaheadv1.OriginServiceServer: a breadth-first walk
// with graph.Traversal, one store read per level, each level streamed as soon
// as it is read (split over several messages when it holds more than
// Config.MessageObjects objects or Config.MessageBytes bytes). Every id is
// visited at most once, so cycles terminate and no object is sent twice.
//
// The budget is graph.Budget's: max_objects caps the ids the walk visits,
// roots included, and known and missing ids use it up too, so the objects
// sent are exactly those graph.Walk visits with the same budget, less the
// known ones. max_objects 0 means Config.MaxObjects. Known ids are walked
// through (their refs followed) but not sent. Missing ids are listed with
// their level; levels with nothing to say send no message.
func (s *Server) Expand(req *lookaheadv1.ExpandRequest, stream lookaheadv1.OriginService_ExpandServer) (err error) {
	const rpc = "Expand"
	defer func(start time.Time) { s.m.observe(rpc, start, err) }(time.Now())
	ctx := stream.Context()
	done, err := s.admit(ctx, rpc)
	if err != nil {
		return err
	}
	defer done()
	if err := s.delay(ctx); err != nil {
		return toStatus(err)
	}
	budget, err := s.expandBudget(req)
	if err != nil {
		return err
	}
	return s.expandLevels(ctx, req, budget, stream)
}

// expandLevels walks an admitted, valid Expand request level by level and
// streams each level.
func (s *Server) expandLevels(ctx context.Context, req *lookaheadv1.ExpandRequest, budget graph.Budget, stream lookaheadv1.OriginService_ExpandServer) error {
	const rpc = "Expand"
	known := make(map[string]struct{}, len(req.GetKnownIds()))
	for _, id := range req.GetKnownIds() {
		known[id] = struct{}{}
	}
	out := levelSender{
		send:       stream.Send,
		sent:       func(objects, bytes int) { s.m.served(rpc, objects, bytes) },
		maxObjects: s.cfg.MessageObjects,
		maxBytes:   s.cfg.MessageBytes,
	}
	t := graph.NewTraversal(req.GetRoots(), budget)
	for !t.Done() {
		if err := ctx.Err(); err != nil {
			return toStatus(err)
		}
		level := uint32(t.Level())
		found, objs, missing, err := s.read(t.Pending(), true)
		if err != nil {
			return toStatus(err)
		}
		out.start(level)
		out.reserve(found)
		// Resolve keeps the order of objs, both in Pending order: walk them
		// together to find each accepted object's bytes.
		j := 0
		for _, o := range t.Resolve(objs) {
			for objs[j] != o {
				j++
			}
			if _, ok := known[o.ID]; ok {
				continue
			}
			if err := out.addObject(found[j]); err != nil {
				return sendStatus(ctx.Err(), err)
			}
		}
		for _, id := range missing {
			if err := out.addMissing(id); err != nil {
				return sendStatus(ctx.Err(), err)
			}
		}
		if err := out.flush(); err != nil {
			return sendStatus(ctx.Err(), err)
		}
	}
	return nil
}

// expandBudget validates an Expand request and returns its budget.
func (s *Server) expandBudget(req *lookaheadv1.ExpandRequest) (graph.Budget, error) {
	if len(req.GetRoots()) == 0 {
		return graph.Budget{}, status.Error(codes.InvalidArgument, "roots: none given")
	}
	if err := s.checkIDs("roots", req.GetRoots()); err != nil {
		return graph.Budget{}, err
	}
	if err := s.checkIDs("known_ids", req.GetKnownIds()); err != nil {
		return graph.Budget{}, err
	}
	if d := int64(req.GetDepth()); d > int64(s.cfg.MaxDepth) {
		return graph.Budget{}, status.Errorf(codes.InvalidArgument, "depth %d exceeds the limit of %d", d, s.cfg.MaxDepth)
	}
	n := int64(req.GetMaxObjects())
	if n > int64(s.cfg.MaxObjects) {
		return graph.Budget{}, status.Errorf(codes.InvalidArgument, "max_objects %d exceeds the limit of %d", n, s.cfg.MaxObjects)
	}
	if n == 0 {
		n = int64(s.cfg.MaxObjects)
	}
	for i, f := range req.GetFields() {
		if f == "" {
			return graph.Budget{}, status.Errorf(codes.InvalidArgument, "fields[%d]: empty field name", i)
		}
	}
	return graph.Budget{Depth: int(req.GetDepth()), MaxObjects: int(n), Fields: req.GetFields()}, nil
}

// sendStatus is the status of a failed Send: the caller's, when it went away.
func sendStatus(ctxErr, sendErr error) error {
	if ctxErr != nil {
		return toStatus(ctxErr)
	}
	return sendErr
}

// levelSender cuts one level's objects and missing ids into messages of at
// most maxObjects objects and about maxBytes bytes; a single larger object
// still goes alone. Objects go as their stored bytes (see wire.go).
type levelSender struct {
	send                 func(*lookaheadv1.ExpandResponse) error
	sent                 func(objects, bytes int) // after each message sent
	maxObjects, maxBytes int
	level                uint32
	raw                  []byte // the message's objects and missing ids, encoded
	objects, missing     int    // in raw
	objectBytes          int    // the objects' own bytes
}

func (l *levelSender) start(level uint32) {
	l.level = level
	l.raw = nil
	l.objects, l.missing, l.objectBytes = 0, 0, 0
}

// reserve sizes the message buffer for objs, up to one message's worth,
// so that it does not grow by copying.
func (l *levelSender) reserve(objs [][]byte) {
	n := 0
	for i, b := range objs {
		if i == l.maxObjects || n >= l.maxBytes {
			break
		}
		n += fieldSize(expandObject, len(b))
	}
	l.raw = make([]byte, 0, n)
}

func (l *levelSender) addObject(b []byte) error {
	if l.objects >= l.maxObjects || (len(l.raw) > 0 && len(l.raw)+fieldSize(expandObject, len(b)) > l.maxBytes) {
		if err := l.flush(); err != nil {
			return err
		}
	}
	l.raw = appendBytesField(l.raw, expandObject, b)
	l.objects++
	l.objectBytes += len(b)
	return nil
}

func (l *levelSender) addMissing(id string) error {
	if len(l.raw) > 0 && len(l.raw)+fieldSize(expandMissed, len(id)) > l.maxBytes {
		if err := l.flush(); err != nil {
			return err
		}
	}
	l.raw = appendStringField(l.raw, expandMissed, id)
	l.missing++
	return nil
}

// flush sends what the current message holds, if anything, and starts the
// next message of the same level.
func (l *levelSender) flush() error {
	if l.objects == 0 && l.missing == 0 {
		return nil
	}
	msg := &lookaheadv1.ExpandResponse{Level: l.level}
	setRaw(msg, l.raw)
	if err := l.send(msg); err != nil {
		return err
	}
	l.sent(l.objects, l.objectBytes)
	l.start(l.level)
	return nil
}
