package conformance_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/conformance"
	"github.com/lookahead-dev/lookahead/internal/originserver"
	"github.com/lookahead-dev/lookahead/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs the reference origin over a fresh bbolt store, as wrap makes
// it, and returns a connection to it.
func serve(t *testing.T, wrap func(*originserver.Server) lookaheadv1.OriginServiceServer) *grpc.ClientConn {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "origin.db"), store.Config{NoSync: true})
	require.NoError(t, err)
	srv, err := originserver.New(st, originserver.Config{MaxIDs: 100, MaxDepth: 8}, nil)
	require.NoError(t, err)
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	lookaheadv1.RegisterOriginServiceServer(gs, wrap(srv))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Shutdown()
		gs.Stop()
		<-served
		_ = st.Close()
	})
	return cc
}

func asIs(s *originserver.Server) lookaheadv1.OriginServiceServer { return s }

func run(t *testing.T, cc *grpc.ClientConn, writes bool) map[string]conformance.Result {
	t.Helper()
	rs, err := conformance.Run(context.Background(), cc, conformance.Config{Writes: writes})
	require.NoError(t, err)
	byName := map[string]conformance.Result{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	return byName
}

func TestTheReferenceOriginConforms(t *testing.T) {
	cc := serve(t, asIs)
	rs, err := conformance.Run(context.Background(), cc, conformance.Config{Writes: true})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, conformance.Print(&out, rs))
	assert.False(t, conformance.Failed(rs), out.String())
	for _, r := range rs {
		assert.Equal(t, conformance.Pass, r.Outcome, "%s: %s", r.Name, r.Reason)
	}
	assert.Contains(t, out.String(), "expand/known-ids")
	assert.Regexp(t, `\n\d+ passed, 0 failed, 0 skipped\n$`, out.String())

	again := run(t, cc, true)
	for name, r := range again {
		assert.Equal(t, conformance.Pass, r.Outcome, "a second run on the same origin: %s: %s", name, r.Reason)
	}
}

func TestReadOnlyChecksSkipTheWriteChecks(t *testing.T) {
	rs := run(t, serve(t, asIs), false)
	assert.Equal(t, conformance.Pass, rs["batchget/missing"].Outcome)
	assert.Equal(t, conformance.Skip, rs["writes/graph"].Outcome)
	assert.Equal(t, conformance.Skip, rs["expand/cycles"].Outcome)
	assert.Contains(t, rs["watch/resume"].Reason, "--writes")
}

// broken origins: the reference origin with one rule of the contract broken.

type dupBatch struct{ *originserver.Server }

// BatchGet answers an id asked twice twice.
func (d dupBatch) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	resp, err := d.Server.BatchGet(ctx, req)
	if err != nil {
		return nil, err
	}
	// The server's reply carries its objects as encoded bytes: decode it
	// to read them here, as a client would.
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	resp = &lookaheadv1.OriginServiceBatchGetResponse{}
	if err := proto.Unmarshal(b, resp); err != nil {
		return nil, err
	}
	if len(resp.GetObjects()) > 0 {
		resp.Objects = append(resp.Objects, resp.Objects[0])
	}
	return resp, nil
}

type greedyExpand struct{ *originserver.Server }

// Expand ignores max_objects.
func (g greedyExpand) Expand(req *lookaheadv1.ExpandRequest, s lookaheadv1.OriginService_ExpandServer) error {
	req = proto.Clone(req).(*lookaheadv1.ExpandRequest)
	req.MaxObjects = 0
	return g.Server.Expand(req, s)
}

type replayWatch struct{ *originserver.Server }

// Watch ignores from_revision and replays everything.
func (r replayWatch) Watch(req *lookaheadv1.WatchRequest, s lookaheadv1.OriginService_WatchServer) error {
	if req.FromRevision != nil {
		req = &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(0)}
	}
	return r.Server.Watch(req, s)
}

type blindPut struct{ *originserver.Server }

// Put ignores expected_version.
func (b blindPut) Put(ctx context.Context, req *lookaheadv1.OriginServicePutRequest) (*lookaheadv1.OriginServicePutResponse, error) {
	return b.Server.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: req.GetObject()})
}

type fickleIdentity struct {
	*originserver.Server
	n *int
}

// Describe names another dataset every time.
func (f fickleIdentity) Describe(ctx context.Context, req *lookaheadv1.DescribeRequest) (*lookaheadv1.DescribeResponse, error) {
	*f.n++
	resp, err := f.Server.Describe(ctx, req)
	if err == nil {
		resp.DatasetId += strings.Repeat("'", *f.n)
	}
	return resp, err
}

type lenientIDs struct{ *originserver.Server }

// BatchGet answers empty ids as missing rather than INVALID_ARGUMENT.
func (l lenientIDs) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	var ids, empty []string
	for _, id := range req.GetIds() {
		if id == "" {
			empty = append(empty, id)
		} else {
			ids = append(ids, id)
		}
	}
	resp, err := l.Server.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	if err == nil {
		resp.MissingIds = append(resp.MissingIds, empty...)
	}
	return resp, err
}

// wrongShed sheds speculative calls with UNAVAILABLE, which the sidecar
// counts against the origin's circuit breaker.
type wrongShed struct{ *originserver.Server }

func (w wrongShed) BatchGet(ctx context.Context, req *lookaheadv1.OriginServiceBatchGetRequest) (*lookaheadv1.OriginServiceBatchGetResponse, error) {
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("lookahead-speculative")) > 0 {
		return nil, status.Error(codes.Unavailable, "busy")
	}
	return w.Server.BatchGet(ctx, req)
}

func TestTheCheckerFailsABrokenOrigin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wrap      func(*originserver.Server) lookaheadv1.OriginServiceServer
		failing   string
		reasonHas string
	}{
		{"BatchGet answers duplicates", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return dupBatch{s} },
			"batchget/duplicates-and-order", "each id once"},
		{"Expand ignores max_objects", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return greedyExpand{s} },
			"expand/max-objects", "want 1 or 2"},
		{"Watch ignores from_revision", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return replayWatch{s} },
			"watch/resume", "start after from_revision"},
		{"Put ignores expected_version", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return blindPut{s} },
			"writes/expected-version", "want FailedPrecondition"},
		{"Describe names a new dataset every time", func(s *originserver.Server) lookaheadv1.OriginServiceServer {
			return fickleIdentity{s, new(int)}
		}, "describe/identity-stable", "dataset_id changed"},
		{"speculation shed UNAVAILABLE", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return wrongShed{s} },
			"batchget/speculative-or-shed", "want OK, or ResourceExhausted when shed"},
		{"BatchGet takes an empty id", func(s *originserver.Server) lookaheadv1.OriginServiceServer { return lenientIDs{s} },
			"batchget/bad-input", "an empty id: want InvalidArgument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := conformance.Run(context.Background(), serve(t, tc.wrap), conformance.Config{Writes: true})
			require.NoError(t, err)
			require.True(t, conformance.Failed(rs))
			var failed []string
			for _, r := range rs {
				if r.Outcome == conformance.Fail {
					failed = append(failed, r.Name)
				}
				if r.Name == tc.failing {
					assert.Equal(t, conformance.Fail, r.Outcome)
					assert.Contains(t, r.Reason, tc.reasonHas)
				}
			}
			assert.Contains(t, failed, tc.failing)
		})
	}
}
