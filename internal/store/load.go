package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// Load bulk-writes every object gen emits (a dataset generator's Generate or a
// decoder such as graph.DecodeNDJSON), Config.BatchSize objects per
// transaction. Each object keeps the version it was emitted with (1 when 0)
// unless its id already had that version or a later one, in which case it
// gets the next one, so versions of an id never go backwards; every object
// gets its own change and revision. The emitted objects are kept until their
// batch commits and must not be modified; gen calls emit from one goroutine.
//
// Load returns the number of objects committed. When gen or a write fails, the
// batches committed before stay.
func (s *Store) Load(gen func(emit graph.EmitFunc) error) (n int, err error) {
	batch := make([]*graph.Object, 0, s.cfg.BatchSize)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := s.update(func(tx *bolt.Tx) error { return loadBatch(tx, batch) }); err != nil {
			return fmt.Errorf("writing objects %d to %d: %w", n+1, n+len(batch), err)
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	emit := func(o *graph.Object) error {
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
	}
	if err := gen(emit); err != nil {
		return n, fmt.Errorf("loading objects: %w", err)
	}
	if err := flush(); err != nil {
		return n, fmt.Errorf("loading objects: %w", err)
	}
	return n, nil
}

func loadBatch(tx *bolt.Tx, batch []*graph.Object) error {
	for _, o := range batch {
		v, err := loadVersions(tx, o.ID)
		if err != nil {
			return err
		}
		stored := *o
		if stored.Version == 0 {
			stored.Version = 1
		}
		if stored.Version <= v.last {
			stored.Version = v.last + 1
		}
		if err := writeObject(tx, &stored, v); err != nil {
			return err
		}
		if _, err := appendChange(tx, Change{ID: o.ID, Version: stored.Version}); err != nil {
			return err
		}
	}
	return nil
}
