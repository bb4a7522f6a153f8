package originserver

import (
	"context"
	"time"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// DatasetHeader is the header in which a Watch stream names the dataset its
// revisions belong to, beside RevisionHeader.
const DatasetHeader = "lookahead-dataset-id"

// Describe implements lookaheadv1.OriginServiceServer: the store's dataset
// identity, every optional RPC implemented, and the request limits.
func (s *Server) Describe(ctx context.Context, _ *lookaheadv1.DescribeRequest) (_ *lookaheadv1.DescribeResponse, err error) {
	defer func(start time.Time) { s.m.observe("Describe", start, err) }(time.Now())
	if err := s.delay(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &lookaheadv1.DescribeResponse{
		DatasetId: s.st.Identity(),
		Expand:    true, Watch: true, Writes: true,
		Limits: &lookaheadv1.OriginLimits{
			MaxIds: uint32(s.cfg.MaxIDs), MaxDepth: uint32(s.cfg.MaxDepth), MaxObjects: uint32(s.cfg.MaxObjects),
		},
	}, nil
}
