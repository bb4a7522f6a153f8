package originserver

import (
	"context"
	"time"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
	"github.com/lookahead-dev/lookahead/internal/reqcheck"
)

// BatchGet implements lookaheadv1.OriginServiceServer. It sends the stored
// bytes of each object without decoding them (see wire.go). Objects come in the
// order their ids were asked for, an id asked for twice is answered once, and
// ids the store does not have are listed in missing_ids. INVALID_ARGUMENT
// names the first bad id, or says that there are more than Config.MaxIDs.
func (s *Server) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (_ *lookaheadv1.OriginServiceBatchGetResponse, err error) {
	const rpc = "BatchGet"
	defer func(start time.Time) { s.m.observe(rpc, start, err) }(time.Now())
	done, err := s.admit(ctx, rpc)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.delay(ctx); err != nil {
		return nil, toStatus(err)
	}
	if err := s.checkIDs("ids", req.GetIds()); err != nil {
		return nil, err
	}
	found, _, missing, err := s.read(req.GetIds(), false)
	if err != nil {
		return nil, toStatus(err)
	}
	bytes, size := 0, 0
	for _, b := range found {
		bytes += len(b)
		size += fieldSize(batchObjects, len(b))
	}
	for _, id := range missing {
		size += fieldSize(batchMissing, len(id))
	}
	raw := make([]byte, 0, size)
	for _, b := range found {
		raw = appendBytesField(raw, batchObjects, b)
	}
	for _, id := range missing {
		raw = appendStringField(raw, batchMissing, id)
	}
	resp := &lookaheadv1.OriginServiceBatchGetResponse{}
	setRaw(resp, raw) // see wire.go: the stored objects, sent as they are
	s.m.served(rpc, len(found), bytes)
	return resp, nil
}

// Put implements lookaheadv1.OriginServiceServer. The object's version is
// assigned by the store (the one in the request is ignored) and returned with
// the revision of the change. With expected_version set, a store at another
// version answers FAILED_PRECONDITION: the caller should read the object
// again and decide; retrying the same request cannot succeed.
func (s *Server) Put(ctx context.Context, req *lookaheadv1.OriginServicePutRequest) (_ *lookaheadv1.OriginServicePutResponse, err error) {
	defer func(start time.Time) { s.m.observe("Put", start, err) }(time.Now())
	done, err := s.admit(ctx, "Put")
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.delay(ctx); err != nil {
		return nil, toStatus(err)
	}
	if err := checkObject(req.GetObject()); err != nil {
		return nil, err
	}
	version, revision, err := s.st.Put(graphpb.FromProto(req.GetObject()), req.ExpectedVersion)
	if err != nil {
		return nil, toStatus(err)
	}
	return &lookaheadv1.OriginServicePutResponse{Version: version, Revision: revision}, nil
}

// Delete implements lookaheadv1.OriginServiceServer: NOT_FOUND when there is
// no such object, FAILED_PRECONDITION when expected_version is set and the
// object is at another version.
func (s *Server) Delete(ctx context.Context, req *lookaheadv1.OriginServiceDeleteRequest) (_ *lookaheadv1.OriginServiceDeleteResponse, err error) {
	defer func(start time.Time) { s.m.observe("Delete", start, err) }(time.Now())
	done, err := s.admit(ctx, "Delete")
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.delay(ctx); err != nil {
		return nil, toStatus(err)
	}
	if err := reqcheck.ID("id", req.GetId()); err != nil {
		return nil, err
	}
	revision, err := s.st.Delete(req.GetId(), req.ExpectedVersion)
	if err != nil {
		return nil, toStatus(err)
	}
	return &lookaheadv1.OriginServiceDeleteResponse{Revision: revision}, nil
}
