package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Headers of a Watch stream (origin.proto).
const (
	revisionHeader = "lookahead-revision"
	datasetHeader  = "lookahead-dataset-id"
)

// wantCode says what is wrong when err does not carry code.
func wantCode(err error, code codes.Code, what string) error {
	if got := status.Code(err); got != code {
		return fmt.Errorf("%s: want %s, got %s (%v)", what, code, got, err)
	}
	return nil
}

func unimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

func (c *checker) describeStable(ctx context.Context) error {
	d, err := c.rpc.Describe(ctx, &lookaheadv1.DescribeRequest{})
	if unimplemented(err) {
		return skip("no Describe: the origin has no dataset identity (optional)")
	}
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	c.desc = d
	again, err := c.rpc.Describe(ctx, &lookaheadv1.DescribeRequest{})
	if err != nil {
		return fmt.Errorf("second describe: %w", err)
	}
	if again.GetDatasetId() != d.GetDatasetId() {
		return fmt.Errorf("dataset_id changed between two calls: %q, then %q", d.GetDatasetId(), again.GetDatasetId())
	}
	if d.GetDatasetId() == "" {
		return skip("Describe answers no dataset_id: the origin has no identity (optional)")
	}
	return nil
}

func (c *checker) healthServing(ctx context.Context) error {
	resp, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if unimplemented(err) {
		return skip("no grpc.health.v1 (optional: the sidecar then probes with a round trip)")
	}
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health check: %s, want SERVING", resp.GetStatus())
	}
	return nil
}

func (c *checker) batchGetEmpty(ctx context.Context) error {
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{})
	if err != nil {
		return fmt.Errorf("BatchGet of no ids: want OK (the sidecar probes with it), got %w", err)
	}
	if len(resp.GetObjects())+len(resp.GetMissingIds()) > 0 {
		return fmt.Errorf("BatchGet of no ids answered %d objects and %d missing ids", len(resp.GetObjects()), len(resp.GetMissingIds()))
	}
	return nil
}

func (c *checker) batchGetMissing(ctx context.Context) error {
	ids := []string{c.prefix + "never-1", c.prefix + "never-2"}
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	if err != nil {
		return fmt.Errorf("BatchGet of ids that do not exist: want OK with missing_ids, got %w", err)
	}
	if n := len(resp.GetObjects()); n > 0 {
		return fmt.Errorf("BatchGet of ids that do not exist answered %d objects", n)
	}
	if !sameSet(resp.GetMissingIds(), ids) {
		return fmt.Errorf("missing_ids %q, want each of %q once", resp.GetMissingIds(), ids)
	}
	return nil
}

func (c *checker) batchGetBadInput(ctx context.Context) error {
	cases := []struct {
		what string
		ids  []string
	}{
		{"an empty id", []string{"ok", ""}},
		{"an id over 1 KiB", []string{strings.Repeat("x", 1025)}},
	}
	if n := c.desc.GetLimits().GetMaxIds(); n > 0 && n < 1_000_000 {
		ids := make([]string, n+1)
		for i := range ids {
			ids[i] = c.prefix + strconv.Itoa(i)
		}
		cases = append(cases, struct {
			what string
			ids  []string
		}{fmt.Sprintf("%d ids, over the max_ids %d Describe reports", n+1, n), ids})
	}
	for _, tc := range cases {
		_, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: tc.ids})
		if err := wantCode(err, codes.InvalidArgument, "BatchGet with "+tc.what); err != nil {
			return err
		}
	}
	return nil
}

// expandAll runs an Expand to its end and returns its messages.
func (c *checker) expandAll(ctx context.Context, req *lookaheadv1.ExpandRequest) ([]*lookaheadv1.ExpandResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Expand(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []*lookaheadv1.ExpandResponse
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, msg)
	}
}

func (c *checker) expandBadInput(ctx context.Context) error {
	cases := []struct {
		what string
		req  *lookaheadv1.ExpandRequest
	}{
		{"no roots", &lookaheadv1.ExpandRequest{Depth: 1}},
		{"an empty root", &lookaheadv1.ExpandRequest{Roots: []string{""}}},
		{"an empty field name", &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Fields: []string{""}}},
		{"an empty known id", &lookaheadv1.ExpandRequest{Roots: []string{"a"}, KnownIds: []string{""}}},
	}
	if d := c.desc.GetLimits().GetMaxDepth(); d > 0 && d < 1<<31 {
		cases = append(cases, struct {
			what string
			req  *lookaheadv1.ExpandRequest
		}{fmt.Sprintf("depth %d, over the max_depth Describe reports", d+1), &lookaheadv1.ExpandRequest{Roots: []string{"a"}, Depth: d + 1}})
	}
	for i, tc := range cases {
		_, err := c.expandAll(ctx, tc.req)
		if i == 0 && unimplemented(err) {
			return skip("no Expand (optional: the sidecar then fetches level by level)")
		}
		if err := wantCode(err, codes.InvalidArgument, "Expand with "+tc.what); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) expandMissingRoot(ctx context.Context) error {
	root := c.prefix + "never"
	msgs, err := c.expandAll(ctx, &lookaheadv1.ExpandRequest{Roots: []string{root}, Depth: 2})
	if unimplemented(err) {
		return skip("no Expand")
	}
	if err != nil {
		return fmt.Errorf("Expand of a root that does not exist: want OK, got %w", err)
	}
	w := walkOf(msgs)
	if len(w.objects) > 0 {
		return fmt.Errorf("Expand of a root that does not exist sent objects %q", w.ids())
	}
	if !slices.Equal(w.missing[0], []string{root}) || len(w.missing) != 1 {
		return fmt.Errorf("missing ids by level %v, want the root at level 0 only", w.missing)
	}
	return nil
}

func (c *checker) watchHeader(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Watch(ctx, &lookaheadv1.WatchRequest{})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	md, err := stream.Header()
	if err == nil && len(md[revisionHeader]) == 0 {
		_, err = stream.Recv() // a stream that fails at once sends no header
	}
	if unimplemented(err) {
		return skip("no Watch (optional: coherence then rests on TTLs)")
	}
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	vals := md[revisionHeader]
	if len(vals) != 1 {
		return fmt.Errorf("watch header %s: %q, want one decimal revision before any change", revisionHeader, vals)
	}
	if _, err := strconv.ParseUint(vals[0], 10, 64); err != nil {
		return fmt.Errorf("watch header %s: %q: %w", revisionHeader, vals[0], err)
	}
	if ds := md[datasetHeader]; len(ds) > 0 && c.desc.GetDatasetId() != "" && ds[0] != c.desc.GetDatasetId() {
		return fmt.Errorf("watch header %s %q differs from Describe's dataset_id %q", datasetHeader, ds[0], c.desc.GetDatasetId())
	}
	return nil
}

// walk is what an Expand stream sent, by level.
type walk struct {
	objects []*lookaheadv1.Object // in stream order
	level   map[string]uint32     // of each object sent
	missing map[uint32][]string
	dups    []string // ids sent more than once (as objects or missing)
	back    bool     // a level lower than one already sent
}

func walkOf(msgs []*lookaheadv1.ExpandResponse) walk {
	w := walk{level: map[string]uint32{}, missing: map[uint32][]string{}}
	seen := map[string]bool{}
	var last uint32
	for _, m := range msgs {
		if m.GetLevel() < last {
			w.back = true
		}
		last = m.GetLevel()
		for _, o := range m.GetObjects() {
			if seen[o.GetId()] {
				w.dups = append(w.dups, o.GetId())
				continue
			}
			seen[o.GetId()] = true
			w.objects = append(w.objects, o)
			w.level[o.GetId()] = m.GetLevel()
		}
		for _, id := range m.GetMissingIds() {
			if seen[id] {
				w.dups = append(w.dups, id)
				continue
			}
			seen[id] = true
			w.missing[m.GetLevel()] = append(w.missing[m.GetLevel()], id)
		}
	}
	return w
}

func (w walk) ids() []string {
	out := make([]string, len(w.objects))
	for i, o := range w.objects {
		out[i] = o.GetId()
	}
	return out
}

// sameSet reports whether got holds each of want exactly once, in any order.
func sameSet(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
