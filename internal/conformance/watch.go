package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// ourChanges reads a Watch stream from from until it has seen every write
// in want (changes to other ids are skipped: another writer may be busy)
// or WatchWait passes, and checks the revisions it saw grow.
func (c *checker) ourChanges(ctx context.Context, from uint64, want []write) ([]write, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WatchWait)
	defer cancel()
	stream, err := c.rpc.Watch(ctx, &lookaheadv1.WatchRequest{FromRevision: proto.Uint64(from)})
	if err != nil {
		return nil, err
	}
	var got []write
	last := from
	for len(got) < len(want) {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return got, fmt.Errorf("Watch from %d: %d of our %d writes after %v", from, len(got), len(want), c.cfg.WatchWait)
			}
			return got, err
		}
		for _, ch := range msg.GetChanges() {
			if ch.GetRevision() <= last {
				return got, fmt.Errorf("Watch from %d sent revision %d after %d: revisions must grow, and start after from_revision", from, ch.GetRevision(), last)
			}
			last = ch.GetRevision()
			if strings.HasPrefix(ch.GetId(), c.prefix) {
				got = append(got, write{id: ch.GetId(), version: ch.GetVersion(), revision: ch.GetRevision(), deleted: ch.GetDeleted()})
			}
		}
	}
	return got, nil
}

func (c *checker) watchResume(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	if len(c.writes) < 3 {
		return fmt.Errorf("only %d writes were made", len(c.writes))
	}
	first := c.writes[0].revision - 1
	got, err := c.ourChanges(ctx, first, c.writes)
	if unimplemented(err) {
		c.noWatch = true
		return skip("no Watch")
	}
	if err != nil {
		return err
	}
	if err := sameWrites(got, c.writes); err != nil {
		return fmt.Errorf("Watch from before the first write: %w", err)
	}
	mid := len(c.writes) / 2
	got, err = c.ourChanges(ctx, c.writes[mid].revision, c.writes[mid+1:])
	if err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	if err := sameWrites(got, c.writes[mid+1:]); err != nil {
		return fmt.Errorf("Watch resumed from revision %d: %w", c.writes[mid].revision, err)
	}
	now, err := c.watchStart(ctx)
	if err != nil {
		return fmt.Errorf("Watch from now: %w", err)
	}
	if last := c.writes[len(c.writes)-1].revision; now < last {
		return fmt.Errorf("Watch from now announced revision %d, before our last write's %d", now, last)
	}
	return nil
}

// sameWrites compares the changes a Watch sent with the writes made.
func sameWrites(got, want []write) error {
	if len(got) != len(want) {
		return fmt.Errorf("sent %d of our changes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("change %d: got %+v, want %+v (the write's own answer)", i, got[i], want[i])
		}
	}
	return nil
}

func (c *checker) deleteThenRecreate(ctx context.Context) error {
	if err := c.needWrites(); err != nil {
		return err
	}
	o := c.graph["aa"]
	resp, err := c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: o.GetId(), ExpectedVersion: proto.Uint64(o.GetVersion())})
	if err != nil {
		return fmt.Errorf("Delete with expected_version the current version: %w", err)
	}
	del := write{id: o.GetId(), revision: resp.GetRevision(), deleted: true}
	got, err := c.rpc.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{o.GetId()}})
	if err != nil {
		return fmt.Errorf("BatchGet after Delete: %w", err)
	}
	if len(got.GetObjects()) > 0 || len(got.GetMissingIds()) != 1 {
		return fmt.Errorf("BatchGet after Delete answered %d objects and missing %q, want it missing", len(got.GetObjects()), got.GetMissingIds())
	}
	_, err = c.rpc.Delete(ctx, &lookaheadv1.OriginServiceDeleteRequest{Id: o.GetId()})
	if err := wantCode(err, codes.NotFound, "a second Delete"); err != nil {
		return err
	}
	if !c.noWatch {
		changes, err := c.ourChanges(ctx, del.revision-1, []write{del})
		if err != nil && !unimplemented(err) {
			return fmt.Errorf("Watch of the Delete: %w", err)
		}
		if err == nil {
			if !changes[0].deleted || changes[0].version <= o.GetVersion() {
				return fmt.Errorf("Watch sent the Delete as %+v, want deleted with a version above the last one, %d", changes[0], o.GetVersion())
			}
			del.version = changes[0].version
		}
	}
	again, err := c.put(ctx, o, proto.Uint64(0))
	if err != nil {
		return fmt.Errorf("Put with expected_version 0 of a deleted object: %w", err)
	}
	if floor := max(o.GetVersion(), del.version); again.GetVersion() <= floor {
		return fmt.Errorf("re-created object got version %d, want more than %d: versions of an id never go back, deletes included", again.GetVersion(), floor)
	}
	o.Version = again.GetVersion()
	return nil
}

// cleanup deletes what the write checks created.
func (c *checker) cleanup(ctx context.Context) error {
	if c.graph == nil {
		return nil
	}
	var errs []error
	for name, o := range c.graph {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		_, err := c.rpc.Delete(cctx, &lookaheadv1.OriginServiceDeleteRequest{Id: o.GetId()})
		cancel()
		if err != nil && !unimplemented(err) && wantCode(err, codes.NotFound, "") != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// watchStart opens a Watch from now and returns the revision it announced.
func (c *checker) watchStart(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	stream, err := c.rpc.Watch(ctx, &lookaheadv1.WatchRequest{})
	if err != nil {
		return 0, err
	}
	md, err := stream.Header()
	if err != nil {
		return 0, err
	}
	v := md[revisionHeader]
	if len(v) == 0 {
		return 0, fmt.Errorf("no %s header", revisionHeader)
	}
	return strconv.ParseUint(v[0], 10, 64)
}
