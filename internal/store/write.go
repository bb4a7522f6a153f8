package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Put stores o at the next version of its id: 1 for a new id, one more than
// the current (or last deleted) version otherwise. o.Version is ignored and o
// is not modified. When expected is not nil the write happens only if the
// current version equals *expected, 0 meaning that the object must not exist;
// otherwise the error wraps ErrVersionMismatch. Put returns the stored version
// and the revision of the change.
func (s *Store) Put(o *graph.Object, expected *uint64) (version, revision uint64, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, fmt.Errorf("putting object: %w", err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		v, err := loadVersions(tx, o.ID)
		if err != nil {
			return err
		}
		if expected != nil && *expected != v.live {
			return Mismatch(v.live, *expected)
		}
		stored := *o
		stored.Wire = nil // a new version: its encoding is another
		stored.Version = v.last + 1
		if err := writeObject(tx, &stored, v); err != nil {
			return err
		}
		version = stored.Version
		revision, err = appendChange(tx, Change{ID: o.ID, Version: version})
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("putting %q: %w", o.ID, err)
	}
	return version, revision, nil
}

// Delete removes the object id; the error wraps ErrNotFound when there is
// none. When expected is not nil the delete happens only if the current
// version equals *expected (ErrVersionMismatch otherwise). The change records
// version current+1, so that a deletion supersedes every version before it.
func (s *Store) Delete(id string, expected *uint64) (revision uint64, err error) {
	if err := graph.ValidateID(id); err != nil {
		return 0, fmt.Errorf("deleting object: %w", err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		v, err := loadVersions(tx, id)
		if err != nil {
			return err
		}
		if v.live == 0 {
			return ErrNotFound
		}
		if expected != nil && *expected != v.live {
			return Mismatch(v.live, *expected)
		}
		gone := v.live + 1
		if err := tx.Bucket(bucketObjects).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTombstones).Put([]byte(id), u64(gone)); err != nil {
			return err
		}
		revision, err = appendChange(tx, Change{ID: id, Version: gone, Deleted: true})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("deleting %q: %w", id, err)
	}
	return revision, nil
}

// Mismatch is the error of a write that expected version expected of an
// object at version current (0 = absent); it wraps ErrVersionMismatch.
func Mismatch(current, expected uint64) error {
	if current == 0 {
		return fmt.Errorf("%w: object does not exist, expected version %d", ErrVersionMismatch, expected)
	}
	return fmt.Errorf("%w: object is at version %d, expected %d", ErrVersionMismatch, current, expected)
}

// versions of one id: live is the stored object's version (0 = absent), last
// the highest version the id ever had, deleted or not.
type versions struct {
	live, last uint64
	tombstone  bool
}

func loadVersions(tx *bolt.Tx, id string) (versions, error) {
	o, err := getObject(tx.Bucket(bucketObjects), id)
	if err != nil {
		return versions{}, err
	}
	if o != nil {
		// A stored object never has version 0: writers assign at least 1.
		return versions{live: o.Version, last: o.Version}, nil
	}
	if t := tx.Bucket(bucketTombstones).Get([]byte(id)); len(t) == 8 {
		return versions{last: binary.BigEndian.Uint64(t), tombstone: true}, nil
	}
	return versions{}, nil
}

// writeObject stores o and drops the id's tombstone, whose version o now
// carries forward.
func writeObject(tx *bolt.Tx, o *graph.Object, v versions) error {
	if v.tombstone {
		if err := tx.Bucket(bucketTombstones).Delete([]byte(o.ID)); err != nil {
			return err
		}
	}
	return putObject(tx.Bucket(bucketObjects), o)
}

// appendChange logs c at the next revision and returns that revision.
func appendChange(tx *bolt.Tx, c Change) (uint64, error) {
	return appendChangeTo(tx.Bucket(bucketChanges), c)
}

// appendChangeTo logs c in the changes bucket b (live or staged).
func appendChangeTo(b *bolt.Bucket, c Change) (uint64, error) {
	// Revisions only grow, so every key lands at the right edge of the tree;
	// full pages waste no space.
	b.FillPercent = 1
	rev, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	v, err := proto.Marshal(&lookaheadv1.Change{Id: c.ID, Version: c.Version, Deleted: c.Deleted})
	if err != nil {
		return 0, fmt.Errorf("encoding change: %w", err)
	}
	if err := b.Put(u64(rev), v); err != nil {
		return 0, err
	}
	return rev, nil
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
