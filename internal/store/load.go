package store

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// bucketLoad stages a Load: nested buckets named like the live objects and
// changes buckets, filled Config.BatchSize objects per transaction and
// switched in by one final transaction. A staging bucket found by Open is
// the leftover of a load that never finished, and is dropped.
var bucketLoad = []byte("load")

// Load bulk-writes every object gen emits (a dataset generator's Generate or a
// decoder such as graph.DecodeNDJSON), all or nothing: the objects are staged
// Config.BatchSize per transaction, so memory stays bounded, and become
// visible together in one last transaction. When gen or a write fails (an
// invalid object, a malformed line, a cancelled context) or the process dies
// before that, the store stays as it was, so a rerun starts over rather than
// finding part of a dataset. Each object keeps the version it was emitted
// with (1 when 0) unless its id already had that version or a later one, in
// which case it gets the next one, so versions of an id never go backwards;
// every object gets its own change and revision. gen calls emit from one
// goroutine. Other writes wait while a load runs; reads do not.
//
// Load returns the number of objects stored: all that gen emitted, or 0 with
// the error.
func (s *Store) Load(gen func(emit graph.EmitFunc) error) (int, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	n, err := s.stage(gen)
	if err == nil {
		err = s.switchIn()
	}
	if err != nil {
		if derr := closedErr(s.db.Update(dropStaging)); derr != nil {
			err = errors.Join(err, fmt.Errorf("dropping the staged objects: %w", derr))
		}
		return 0, fmt.Errorf("loading objects (none stored): %w", err)
	}
	return n, nil
}

// stage writes what gen emits into the staging buckets and returns how many
// objects it staged.
func (s *Store) stage(gen func(emit graph.EmitFunc) error) (n int, err error) {
	if err := closedErr(s.db.Update(func(tx *bolt.Tx) error {
		if err := dropStaging(tx); err != nil {
			return err
		}
		st, err := tx.CreateBucket(bucketLoad)
		if err != nil {
			return err
		}
		if _, err := st.CreateBucket(bucketObjects); err != nil {
			return err
		}
		ch, err := st.CreateBucket(bucketChanges)
		if err != nil {
			return err
		}
		return ch.SetSequence(tx.Bucket(bucketChanges).Sequence())
	})); err != nil {
		return 0, fmt.Errorf("creating the staging area: %w", err)
	}
	batch := make([]*graph.Object, 0, s.cfg.BatchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := closedErr(s.db.Update(func(tx *bolt.Tx) error { return stageBatch(tx, batch) })); err != nil {
			return fmt.Errorf("staging objects %d to %d: %w", n+1, n+len(batch), err)
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	err = gen(func(o *graph.Object) error {
		if err := o.Validate(); err != nil {
			if o != nil {
				return fmt.Errorf("object %d (%q): %w", n+len(batch)+1, o.ID, err)
			}
			return fmt.Errorf("object %d: %w", n+len(batch)+1, err)
		}
		batch = append(batch, o)
		if len(batch) < s.cfg.BatchSize {
			return nil
		}
		return flush()
	})
	if err != nil {
		return n, err
	}
	return n, flush()
}

// stageBatch stages each object at its version: the emitted one, or past
// the last one its id had, staged or live.
func stageBatch(tx *bolt.Tx, batch []*graph.Object) error {
	st := tx.Bucket(bucketLoad)
	objects, changes := st.Bucket(bucketObjects), st.Bucket(bucketChanges)
	for _, o := range batch {
		last, err := lastVersion(tx, objects, o.ID)
		if err != nil {
			return err
		}
		stored := *o
		stored.Wire = nil // a new version: its encoding is another
		if stored.Version == 0 {
			stored.Version = 1
		}
		if stored.Version <= last {
			stored.Version = last + 1
		}
		if err := putObject(objects, &stored); err != nil {
			return err
		}
		if _, err := appendChangeTo(changes, Change{ID: o.ID, Version: stored.Version}); err != nil {
			return err
		}
	}
	return nil
}

// lastVersion is the highest version id has had, staged or live.
func lastVersion(tx *bolt.Tx, staged *bolt.Bucket, id string) (uint64, error) {
	o, err := getObject(staged, id)
	if err != nil || o != nil {
		return versionOf(o), err
	}
	v, err := loadVersions(tx, id)
	return v.last, err
}

func versionOf(o *graph.Object) uint64 {
	if o == nil {
		return 0
	}
	return o.Version
}

// switchIn makes the staged objects and changes live in one transaction.
// Into a store that never held anything it moves the staged buckets in
// place; otherwise it copies them, in key order.
func (s *Store) switchIn() error {
	return s.commit(func(tx *bolt.Tx) error {
		st := tx.Bucket(bucketLoad)
		if pristine(tx) {
			for _, name := range [][]byte{bucketObjects, bucketChanges} {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
				if err := tx.MoveBucket(name, st, nil); err != nil {
					return fmt.Errorf("moving the staged %s: %w", name, err)
				}
			}
			return tx.DeleteBucket(bucketLoad)
		}
		objects, tombstones := tx.Bucket(bucketObjects), tx.Bucket(bucketTombstones)
		err := st.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
			if err := tombstones.Delete(k); err != nil {
				return err
			}
			return objects.Put(bytes.Clone(k), bytes.Clone(v))
		})
		if err != nil {
			return fmt.Errorf("copying the staged objects: %w", err)
		}
		staged, changes := st.Bucket(bucketChanges), tx.Bucket(bucketChanges)
		changes.FillPercent = 1
		err = staged.ForEach(func(k, v []byte) error { return changes.Put(bytes.Clone(k), bytes.Clone(v)) })
		if err != nil {
			return fmt.Errorf("copying the staged changes: %w", err)
		}
		if err := changes.SetSequence(staged.Sequence()); err != nil {
			return err
		}
		return tx.DeleteBucket(bucketLoad)
	})
}

// pristine reports whether the store never held an object: no object, no
// tombstone, no change.
func pristine(tx *bolt.Tx) bool {
	for _, name := range [][]byte{bucketObjects, bucketChanges, bucketTombstones} {
		if k, _ := tx.Bucket(name).Cursor().First(); k != nil {
			return false
		}
	}
	return tx.Bucket(bucketChanges).Sequence() == 0
}

// dropStaging deletes the staging buckets, if any.
func dropStaging(tx *bolt.Tx) error {
	if tx.Bucket(bucketLoad) == nil {
		return nil
	}
	return tx.DeleteBucket(bucketLoad)
}
