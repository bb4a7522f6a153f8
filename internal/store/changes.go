package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// Change is one committed write, as the change log records it.
type Change struct {
	Revision uint64
	ID       string
	Version  uint64 // the object's version after the change
	Deleted  bool
}

// Revision is the revision of the last committed change; 0 for a new store.
func (s *Store) Revision() uint64 { return s.rev.Load() }

// Changed returns a channel that is closed when the revision next advances,
// or when the store closes. To wait for changes without missing any, take the
// channel first, then read Changes, and wait only if there were none:
//
//	for {
//		ch := st.Changed()
//		cs, err := st.Changes(from, 1000)
//		... send cs, advance from, continue if len(cs) > 0 ...
//		select { case <-ch: case <-ctx.Done(): return ctx.Err() }
//	}
func (s *Store) Changed() <-chan struct{} {
	return s.rev.Changed()
}

// Changes returns up to limit changes with a revision greater than from, in
// revision order; limit <= 0 means all of them. The change log is never
// compacted, so every revision since the store was created is there.
func (s *Store) Changes(from uint64, limit int) ([]Change, error) {
	var out []Change
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(u64(from + 1)); k != nil; k, v = c.Next() {
			if limit > 0 && len(out) == limit {
				break
			}
			if len(k) != 8 {
				return fmt.Errorf("change key %x: not a revision", k)
			}
			var p lookaheadv1.Change
			if err := proto.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("decoding change %x: %w", k, err)
			}
			out = append(out, Change{
				Revision: binary.BigEndian.Uint64(k),
				ID:       p.GetId(),
				Version:  p.GetVersion(),
				Deleted:  p.GetDeleted(),
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading changes after %d: %w", from, err)
	}
	return out, nil
}
