package origin

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
)

// RevisionHeader is the header in which a Watch stream announces the
// revision it starts from.
const RevisionHeader = "lookahead-revision"

// Change is one committed write at the origin.
type Change struct {
	Revision uint64
	ID       string
	Version  uint64
	Deleted  bool
}

// ErrCompacted means the origin no longer keeps the changes after the
// revision a Watch resumed from (OUT_OF_RANGE): the caller must start over
// from the origin's current revision, and cannot know what changed meanwhile.
var ErrCompacted = errors.New("origin watch: revision compacted")

// watchErr marks an OUT_OF_RANGE status as ErrCompacted.
func watchErr(err error) error {
	if status.Code(err) == codes.OutOfRange {
		return fmt.Errorf("%w: %w", ErrCompacted, err)
	}
	return fmt.Errorf("origin watch: %w", err)
}

// WatchStream is an established change stream.
type WatchStream struct {
	c       *Client
	start   uint64
	dataset string
	stream  grpc.ServerStreamingClient[lookaheadv1.WatchResponse]
}

// Start is the revision the origin announced when the stream opened.
func (w *WatchStream) Start() uint64 { return w.start }

// DatasetID is the dataset the origin announced with Start; empty when it
// announced none.
func (w *WatchStream) DatasetID() string { return w.dataset }

// Recv returns the next batch of changes, in revision order. A change to
// an id that could never be cached (empty, or longer than graph.MaxIDBytes)
// is dropped and counted as malformed: it would change nothing, and the
// version floors it would leave behind hold their ids, so an origin
// announcing megabyte ids would fill them with its own bytes.
func (w *WatchStream) Recv() ([]Change, error) {
	resp, err := w.stream.Recv()
	if err != nil {
		return nil, watchErr(err)
	}
	out := make([]Change, 0, len(resp.GetChanges()))
	for _, c := range resp.GetChanges() {
		if graph.ValidateID(c.GetId()) != nil {
			w.c.malformed(metrics.MalformedInvalidID)
			continue
		}
		out = append(out, Change{Revision: c.GetRevision(), ID: c.GetId(), Version: c.GetVersion(), Deleted: c.GetDeleted()})
	}
	return out, nil
}

// Watch opens the origin's change stream after revision from, or from the
// origin's current revision when from is nil, and waits until the origin has
// announced its start revision. An origin without Watch yields an error
// matching errors.ErrUnsupported. The stream ends with ctx.
func (c *Client) Watch(ctx context.Context, from *uint64) (*WatchStream, error) {
	// Not counted as a round trip: the stream is set up once and its
	// health is lookahead_watch_connected, not a fetch.
	stream, err := c.rpc.Watch(ctx, &lookaheadv1.WatchRequest{FromRevision: from})
	var md map[string][]string
	if err == nil {
		md, err = stream.Header()
	}
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("origin watch: %w: %w", errors.ErrUnsupported, err)
	}
	if err != nil {
		return nil, watchErr(err)
	}
	vals := md[RevisionHeader]
	if len(vals) == 0 {
		// The header may be absent when the stream failed before it began.
		if _, rerr := stream.Recv(); rerr != nil {
			if status.Code(rerr) == codes.Unimplemented {
				return nil, fmt.Errorf("origin watch: %w: %w", errors.ErrUnsupported, rerr)
			}
			return nil, watchErr(rerr)
		}
		return nil, errors.New("origin watch: no " + RevisionHeader + " header")
	}
	rev, err := strconv.ParseUint(vals[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("origin watch: %s header %q: %w", RevisionHeader, vals[0], err)
	}
	var dataset string
	if ds := md[DatasetHeader]; len(ds) > 0 {
		dataset = ds[0]
	}
	return &WatchStream{c: c, start: rev, dataset: dataset, stream: stream}, nil
}
