package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// errorRow is one row of the README's Errors table: its code and when
// cells, verbatim.
type errorRow struct{ code, when string }

// readmeErrors reads the Errors table of the README.
func readmeErrors(t *testing.T) []errorRow {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "\n## Errors\n")
	require.True(t, ok, "the README has an Errors section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	var rows []errorRow
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		rows = append(rows, errorRow{code: strings.TrimPrefix(cells[0], "| "), when: cells[1]})
	}
	return rows
}

// whenStarts finds the README row of code whose when cell starts with
// prefix.
func whenStarts(rows []errorRow, code, prefix string) (errorRow, bool) {
	for _, r := range rows {
		if r.code == code && strings.HasPrefix(r.when, prefix) {
			return r, true
		}
	}
	return errorRow{}, false
}

// TestReadmeErrorsTable provokes each row of the README's Errors table
// against a sidecar in front of an origintest.Origin, and checks that the
// table has exactly these rows.
func TestReadmeErrorsTable(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "shard down")
	tests := []struct {
		code, when string // the README row: its code cell and how its when cell starts
		cfg        origin.Config
		bad        origintest.Misbehaviour
		call       func(ctx context.Context, r *hostileRig) error
		wantCode   codes.Code
		wantMsg    string
	}{
		{code: "`INVALID_ARGUMENT`", when: "an id is empty",
			call: func(ctx context.Context, r *hostileRig) error {
				_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: "id: empty id"},
		{code: "`INVALID_ARGUMENT`", when: "the request does not decode",
			call: func(ctx context.Context, r *hostileRig) error {
				in, out := stringField(1, "\xff"), []byte(nil)
				return r.cc.Invoke(ctx, "/lookahead.v1.SidecarService/Get", &in, &out, grpc.ForceCodecV2(rawCodec{}))
			},
			wantCode: codes.InvalidArgument, wantMsg: "request: string field contains invalid UTF-8"},
		{code: "`INVALID_ARGUMENT`", when: "a Put of an invalid object", cfg: origin.Config{MaxObjectBytes: 200},
			call: func(ctx context.Context, r *hostileRig) error {
				_, err := r.client.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "c", Payload: make([]byte, 200)}})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: `object "c": 297 bytes exceed the limit of 200: object too large`},
		{code: "`NOT_FOUND`", when: "a Get of an id the origin says does not exist",
			call: func(ctx context.Context, r *hostileRig) error {
				_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "x"})
				return err
			},
			wantCode: codes.NotFound, wantMsg: `object "x" not found`},
		{code: "`FAILED_PRECONDITION`", when: "a Put or Delete whose expected version",
			call: func(ctx context.Context, r *hostileRig) error {
				v := uint64(7)
				_, err := r.client.Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{Id: "a"}, ExpectedVersion: &v})
				return err
			},
			wantCode: codes.FailedPrecondition, wantMsg: `object "a" is at version 1, not 7`},
		{code: "`UNAVAILABLE`", when: "the origin cannot be reached", bad: origintest.Misbehaviour{BatchGetErr: unavailable},
			call: getA, wantCode: codes.Unavailable, wantMsg: "origin unavailable: origin batch get: shard down"},
		{code: "`UNAVAILABLE`", when: "the circuit breaker is open", cfg: origin.Config{BreakerFailures: 1, Retries: -1, BreakerCooldown: time.Hour},
			bad: origintest.Misbehaviour{BatchGetErr: unavailable},
			call: func(ctx context.Context, r *hostileRig) error {
				_ = getA(ctx, r) // opens it
				return getA(ctx, r)
			},
			wantCode: codes.Unavailable, wantMsg: "origin unavailable: origin batch get: origin circuit open: last failure: shard down"},
		{code: "`UNAVAILABLE`", when: "the origin left an asked id out of its reply", bad: origintest.Misbehaviour{Omit: []string{"a"}},
			call: getA, wantCode: codes.Unavailable, wantMsg: `origin reply incomplete: 1 asked id neither sent nor listed missing: "a"`},
		{code: "`UNAVAILABLE`", when: "the origin's Expand stream broke the walk's rules",
			bad: origintest.Misbehaviour{Level: origintest.LevelAlways(4294967295)},
			call: func(ctx context.Context, r *hostileRig) error {
				s, err := r.client.GetGraph(ctx, &lookaheadv1.GetGraphRequest{Roots: []string{"a"}, Depth: u32(2)})
				require.NoError(t, err)
				for err == nil {
					_, err = s.Recv()
				}
				return err
			},
			wantCode: codes.Unavailable, wantMsg: "origin fault: "},
		{code: "`DEADLINE_EXCEEDED`", when: "the caller's deadline passed", bad: origintest.Misbehaviour{Hang: true},
			call: func(ctx context.Context, r *hostileRig) error {
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				return getA(ctx, r)
			},
			wantCode: codes.DeadlineExceeded},
		{code: "`CANCELLED`", when: "the caller cancelled", bad: origintest.Misbehaviour{Hang: true},
			call: func(ctx context.Context, r *hostileRig) error {
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
				return getA(ctx, r)
			},
			wantCode: codes.Canceled},
		{code: "`INTERNAL`", when: "the origin sent what the sidecar refuses to cache", cfg: origin.Config{MaxObjectBytes: 200},
			call: func(ctx context.Context, r *hostileRig) error {
				r.origin.Set(&graph.Object{ID: "a", Version: 1, Payload: make([]byte, 200)})
				return getA(ctx, r)
			},
			wantCode: codes.Internal, wantMsg: `origin batch get: origin reply malformed: object "a": 297 bytes exceed the limit of 200`},
		{code: "`INTERNAL`", when: "the origin answered a code the sidecar has no better one for",
			bad:  origintest.Misbehaviour{BatchGetErr: status.Error(codes.DataLoss, "disk gone")},
			call: getA, wantCode: codes.Internal, wantMsg: "origin: origin batch get: disk gone"},
		{code: "`ABORTED`, `PERMISSION_DENIED`, `UNAUTHENTICATED`, `RESOURCE_EXHAUSTED`", when: "the origin answered it",
			bad:  origintest.Misbehaviour{BatchGetErr: status.Error(codes.PermissionDenied, "not yours")},
			call: getA, wantCode: codes.PermissionDenied, wantMsg: "origin batch get: not yours"},
		{code: "`UNIMPLEMENTED`", when: "a method the sidecar does not have",
			call: func(ctx context.Context, r *hostileRig) error {
				in, out := []byte(nil), []byte(nil)
				return r.cc.Invoke(ctx, "/lookahead.v1.SidecarService/Teleport", &in, &out, grpc.ForceCodecV2(rawCodec{}))
			},
			wantCode: codes.Unimplemented},
	}
	// Rows provoked elsewhere, where what they need runs.
	elsewhere := []errorRow{
		{"`UNAVAILABLE`", "the origin keeps answering a version older"},          // internal/fetch: needs the change stream's versions
		{"`UNAVAILABLE`", "the client's own connection fails"},                   // test/faults: TLS end to end
		{"`RESOURCE_EXHAUSTED`", "a request, a reply or an origin reply larger"}, // test/faults: message and object limits
		{"`RESOURCE_EXHAUSTED`", "a BatchGet whose objects take more"},           // limits_test.go: TestBatchGetReplyOverTheLimitIsRefused
		{"`RESOURCE_EXHAUSTED`", "a Subscribe while 1024 near-cache"},            // hostile_subscribe_test.go: TestSubscribersBeyondTheLimitAreRefused
		{"`RESOURCE_EXHAUSTED`", "a GetGraph while `--max-walks`"},               // server_test.go: TestGetGraphFloodIsRefused
		{"`RESOURCE_EXHAUSTED`", "a GetGraph while replies not yet read hold"},   // streams_test.go: TestStreamMemoryIsBounded
		{"`RESOURCE_EXHAUSTED`", "a Get or BatchGet reply of more than 1 KiB"},   // replies_test.go: TestRepliesAClientDoesNotReadAreBounded
		{"`RESOURCE_EXHAUSTED`", "a Get or BatchGet with an id the cache"},       // admission_test.go: TestOriginRequestsAreAdmitted
	}
	rows := readmeErrors(t)
	covered := map[errorRow]bool{}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.when, func(t *testing.T) {
			row, ok := whenStarts(rows, tt.code, tt.when)
			require.True(t, ok, "the README's Errors table has a %s row starting %q", tt.code, tt.when)
			covered[row] = true
			o := origintest.New(&graph.Object{ID: "a", Version: 1})
			r := newHostileRig(t, o, tt.cfg)
			o.Misbehave(tt.bad)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := tt.call(ctx, r)
			assert.Equal(t, tt.wantCode, status.Code(err), "%v", err)
			assert.Contains(t, status.Convert(err).Message(), tt.wantMsg)
		})
	}
	for _, e := range elsewhere {
		row, ok := whenStarts(rows, e.code, e.when)
		require.True(t, ok, "the README's Errors table has a %s row starting %q", e.code, e.when)
		covered[row] = true
	}
	for _, row := range rows {
		assert.True(t, covered[row], "README row %s %q is neither provoked here nor named as tested elsewhere", row.code, row.when)
	}
}

func getA(ctx context.Context, r *hostileRig) error {
	_, err := r.client.Get(ctx, &lookaheadv1.GetRequest{Id: "a"})
	return err
}
