package conformance

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// The graph the write checks create, by short name (ids are prefixed):
//
//	root ─kids─▶ a ─kids─▶ aa
//	  │  ─kids─▶ b ─kids─▶ absent (never written: a dangling ref)
//	  └─owner──▶ o         a ─back─▶ root (a cycle)
//
// From root, level 1 is {a, b, o} and level 2 is {aa} with absent missing.
var graphRefs = []struct {
	name string
	refs [][2]string // field, short name
}{
	{"root", [][2]string{{"kids", "a"}, {"kids", "b"}, {"owner", "o"}}},
	{"a", [][2]string{{"kids", "aa"}, {"back", "root"}}},
	{"b", [][2]string{{"kids", "absent"}}},
	{"aa", nil},
	{"o", nil},
}

func (c *checker) id(name string) string { return c.prefix + name }

func (c *checker) object(name string) *lookaheadv1.Object {
	o := &lookaheadv1.Object{Id: c.id(name), Type: "ConformanceNode", Payload: []byte("payload of " + name)}
	for _, g := range graphRefs {
		if g.name == name {
			for _, r := range g.refs {
				o.Refs = append(o.Refs, &lookaheadv1.Ref{Field: r[0], Id: c.id(r[1])})
			}
		}
	}
	return o
}

// needWrites skips a check when the origin is read-only.
func (c *checker) needWrites() error {
	if c.readOnly {
		return skip("the origin is read-only (Put answered UNIMPLEMENTED)")
	}
	if c.graph == nil { // writes/graph failed, and says why
		return skip("writes/graph failed: nothing to check against")
	}
	return nil
}

// put writes o and records the write.
func (c *checker) put(ctx context.Context, o *lookaheadv1.Object, expected *uint64) (*lookaheadv1.OriginServicePutResponse, error) {
	resp, err := c.rpc.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: o, ExpectedVersion: expected})
	if err != nil {
		return nil, err
	}
	c.writes = append(c.writes, write{id: o.GetId(), version: resp.GetVersion(), revision: resp.GetRevision()})
	return resp, nil
}

func (c *checker) writeBadInput(ctx context.Context) error {
	cases := []struct {
		what string
		req  *lookaheadv1.OriginServicePutRequest
	}{
		{"no object", &lookaheadv1.OriginServicePutRequest{}},
		{"an empty id", &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{Type: "T"}}},
		{"a ref to an empty id", &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{
			Id: c.id("bad"), Refs: []*lookaheadv1.Ref{{Field: "f"}}}}},
	}
	for i, tc := range cases {
		_, err := c.rpc.Put(ctx, tc.req)
		if i == 0 && unimplemented(err) {
			c.readOnly = true
			return skip("no Put: the origin is read-only (optional)")
		}
		if err := wantCode(err, codes.InvalidArgument, "Put with "+tc.what); err != nil {
			return err
		}
	}
	_, err := c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{})
	return wantCode(err, codes.InvalidArgument, "Delete of an empty id")
}

func (c *checker) writeGraph(ctx context.Context) error {
	if c.readOnly {
		return skip("the origin is read-only")
	}
	c.graph = map[string]*lookaheadv1.Object{}
	var last uint64
	for _, g := range graphRefs {
		o := c.object(g.name)
		resp, err := c.put(ctx, o, proto.Uint64(0))
		if unimplemented(err) {
			c.graph, c.readOnly = nil, true
			return skip("Put answered UNIMPLEMENTED: the origin is read-only here (%v)", err)
		}
		if err != nil {
			c.graph = nil
			return fmt.Errorf("Put of new object %s with expected_version 0: %w", o.GetId(), err)
		}
		if resp.GetVersion() == 0 {
			return fmt.Errorf("Put of %s answered version 0; versions start above 0", o.GetId())
		}
		if resp.GetRevision() <= last {
			return fmt.Errorf("Put of %s answered revision %d after %d: revisions must grow with every write", o.GetId(), resp.GetRevision(), last)
		}
		last = resp.GetRevision()
		o.Version = resp.GetVersion()
		c.graph[g.name] = o
	}
	return c.readBack(ctx)
}

// readBack checks that BatchGet answers every graph object as written.
func (c *checker) readBack(ctx context.Context) error {
	var ids []string
	for _, g := range graphRefs {
		ids = append(ids, c.id(g.name))
	}
	resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: ids})
	if err != nil {
		return fmt.Errorf("BatchGet of what was written: %w", err)
	}
	if len(resp.GetMissingIds()) > 0 {
		return fmt.Errorf("BatchGet of what was written lists %q missing", resp.GetMissingIds())
	}
	for _, got := range resp.GetObjects() {
		want := c.graph[got.GetId()[len(c.prefix):]]
		if !proto.Equal(got, want) {
			return fmt.Errorf("BatchGet answered %v, want what was written: %v", got, want)
		}
	}
	if len(resp.GetObjects()) != len(ids) {
		return fmt.Errorf("BatchGet answered %d of %d objects written", len(resp.GetObjects()), len(ids))
	}
	return nil
}

func (c *checker) versionsGrow(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	o := c.graph["root"]
	before := o.GetVersion()
	next := proto.Clone(o).(*lookaheadv1.Object)
	next.Version = 1 // the origin assigns versions; what the request says is ignored
	next.Payload = []byte("payload of root, second")
	resp, err := c.put(ctx, next, nil)
	if err != nil {
		return fmt.Errorf("unconditional Put of an existing object: %w", err)
	}
	if resp.GetVersion() <= before {
		return fmt.Errorf("Put of %s answered version %d, want more than its previous version %d", o.GetId(), resp.GetVersion(), before)
	}
	next.Version = resp.GetVersion()
	c.graph["root"] = next
	return c.readBack(ctx)
}

func (c *checker) expectedVersion(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	o := c.graph["o"]
	cur := o.GetVersion()
	for _, tc := range []struct {
		what     string
		expected uint64
	}{{"0 on an object that exists", 0}, {"a version it does not have", cur + 7}} {
		_, err := c.rpc.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: o, ExpectedVersion: proto.Uint64(tc.expected)})
		if err := wantCode(err, codes.FailedPrecondition, "Put with expected_version "+tc.what); err != nil {
			return err
		}
	}
	_, err := c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: o.GetId(), ExpectedVersion: proto.Uint64(cur + 7)})
	if err := wantCode(err, codes.FailedPrecondition, "Delete with expected_version a version it does not have"); err != nil {
		return err
	}
	_, err = c.rpc.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: c.object("never"), ExpectedVersion: proto.Uint64(3)})
	if err := wantCode(err, codes.FailedPrecondition, "Put of a new object with expected_version 3"); err != nil {
		return err
	}
	_, err = c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: c.id("never")})
	if err := wantCode(err, codes.NotFound, "Delete of an object that does not exist"); err != nil {
		return err
	}
	if err := c.readBack(ctx); err != nil {
		return fmt.Errorf("after refused writes: %w", err)
	}
	resp, err := c.put(ctx, o, proto.Uint64(cur))
	if err != nil {
		return fmt.Errorf("Put with expected_version the current version %d: %w", cur, err)
	}
	if resp.GetVersion() <= cur {
		return fmt.Errorf("conditional Put answered version %d, want more than %d", resp.GetVersion(), cur)
	}
	o.Version = resp.GetVersion()
	return nil
}

func (c *checker) batchGetDuplicates(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	never := c.id("never")
	for _, order := range [][]string{
		{c.id("aa"), never, c.id("root"), c.id("aa"), never},
		{never, c.id("root"), never, c.id("aa"), c.id("root")},
	} {
		resp, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: order})
		if err != nil {
			return fmt.Errorf("BatchGet %q: %w", order, err)
		}
		var got []string
		for _, o := range resp.GetObjects() {
			got = append(got, o.GetId())
		}
		var want []string // each found id once, in the order first asked
		for _, id := range order {
			if id != never && !slices.Contains(want, id) {
				want = append(want, id)
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("BatchGet %q answered objects %q, want %q: each id once, in the order asked", order, got, want)
		}
		if !slices.Equal(resp.GetMissingIds(), []string{never}) {
			return fmt.Errorf("BatchGet %q answered missing_ids %q, want [%q] once", order, resp.GetMissingIds(), never)
		}
	}
	return nil
}
