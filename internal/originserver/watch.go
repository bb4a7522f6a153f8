package originserver

import (
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// RevisionHeader is the header a Watch stream sends before any change: the
// store's revision when the watch began, as a decimal number. A client that
// has received it knows the watch is established, and may resume from it.
const RevisionHeader = "lookahead-revision"

// Watch implements lookaheadv1.OriginServiceServer. It sends every change
// after from_revision in revision order, up to Config.WatchBatch changes per
// message, then waits for new ones and sends them as they commit, until the
// caller goes away, the store closes (UNAVAILABLE) or Shutdown is called
// (UNAVAILABLE). It waits on the store's change notification, never polls.
func (s *Server) Watch(req *lookaheadv1.WatchRequest, stream lookaheadv1.OriginService_WatchServer) (err error) {
	defer func(start time.Time) { s.m.observe("Watch", start, err) }(time.Now())
	ctx := stream.Context()
	if err := s.delay(ctx); err != nil {
		return toStatus(err)
	}
	s.m.watchStreams.Inc()
	defer s.m.watchStreams.Dec()

	// The header announces the revision the watch starts from; a subscriber
	// without from_revision starts there, so it equals what it resumes from.
	current := s.st.Revision()
	from := current
	if req.FromRevision != nil {
		from = req.GetFromRevision()
	}
	header := metadata.Pairs(RevisionHeader, strconv.FormatUint(current, 10), DatasetHeader, s.st.Identity())
	if err := stream.SendHeader(header); err != nil {
		return sendStatus(ctx.Err(), err)
	}
	for {
		select {
		case <-s.shutdown:
			return errShuttingDown
		default:
		}
		// Taking the channel before reading means a commit between the read
		// and the wait still wakes us.
		changed := s.st.Changed()
		changes, err := s.st.Changes(from, s.cfg.WatchBatch)
		if err != nil {
			return toStatus(err)
		}
		if len(changes) > 0 {
			msg := &lookaheadv1.WatchResponse{Changes: make([]*lookaheadv1.Change, len(changes))}
			for i, c := range changes {
				msg.Changes[i] = &lookaheadv1.Change{Revision: c.Revision, Id: c.ID, Version: c.Version, Deleted: c.Deleted}
			}
			if err := stream.Send(msg); err != nil {
				return sendStatus(ctx.Err(), err)
			}
			s.m.changesSent.Add(float64(len(changes)))
			from = changes[len(changes)-1].Revision
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return toStatus(ctx.Err())
		case <-s.shutdown:
			return errShuttingDown
		}
	}
}

var errShuttingDown = status.Error(codes.Unavailable, "origin shutting down")
