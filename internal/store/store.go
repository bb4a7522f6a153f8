// Package store is the reference origin's embedded, persistent object store:
// versioned objects and a change log in one bbolt file.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// Errors callers branch on. Mismatches are wrapped with the versions involved.
var (
	ErrNotFound        = errors.New("store: object not found")
	ErrVersionMismatch = errors.New("store: version mismatch")
	ErrClosed          = errors.New("store: closed")
)

// Buckets of the bbolt file.
var (
	// bucketObjects maps id → lookaheadv1.Object (proto), version included.
	bucketObjects = []byte("objects")
	// bucketChanges maps revision (8 bytes, big-endian, so cursor order is
	// revision order) → lookaheadv1.Change without its revision. The
	// bucket's sequence is the last revision handed out.
	bucketChanges = []byte("changes")
	// bucketTombstones maps the id of a deleted object → its last version
	// (8 bytes, big-endian), so that a re-created object continues counting
	// and versions of an id never go backwards.
	bucketTombstones = []byte("tombstones")
)

// Config tunes a Store. The zero value is ready to use.
type Config struct {
	// BatchSize is the number of objects Load stages per transaction;
	// zero = 10000.
	BatchSize int
	// LockTimeout is how long Open waits for another process to release the
	// file; zero = 1s.
	LockTimeout time.Duration
	// NoSync skips fsync on commit: faster loads, but a crash may lose the
	// last commits. Zero = sync every commit.
	NoSync bool
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = 10000
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = time.Second
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("store: batch size %d is negative", c.BatchSize))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("store: lock timeout %v is negative", c.LockTimeout))
	}
	return errors.Join(errs...)
}

// Store holds objects with versions and a change log of every write. It is
// safe for concurrent use; bbolt serializes writers and lets readers run in
// parallel with them.
type Store struct {
	db  *bolt.DB
	cfg Config
	rev *Revisions // last committed revision

	// loadMu is held by Load and shared by every other write, so that the
	// live data cannot change between staging a load and switching it in.
	loadMu sync.RWMutex

	datasetID string // see Identity; set by Open
}

// Open opens or creates the store file at path.
func Open(path string, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.LockTimeout, NoSync: cfg.NoSync})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("opening store %s: locked by another process", path)
		}
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	s := &Store{db: db, cfg: cfg, rev: NewRevisions(0)}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketObjects, bucketChanges, bucketTombstones} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		s.rev.Advance(tx.Bucket(bucketChanges).Sequence())
		var err error
		s.datasetID, err = loadDatasetID(tx)
		if err != nil {
			return err
		}
		return dropStaging(tx)
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the file and wakes every Changed waiter. It waits for running
// transactions and is idempotent; later calls of other methods return
// ErrClosed.
func (s *Store) Close() error {
	if !s.rev.Close() {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing store: %w", err)
	}
	return nil
}

// Empty reports whether the store holds no objects.
func (s *Store) Empty() (bool, error) {
	empty := true
	err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketObjects).Cursor().First()
		empty = k == nil
		return nil
	})
	return empty, err
}

// Get reads the objects it has among ids in one read transaction. Found
// objects come in request order and missing ids in request order; an id asked
// for more than once is answered once.
func (s *Store) Get(ids []string) (found []*graph.Object, missing []string, err error) {
	seen := make(map[string]struct{}, len(ids))
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketObjects)
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
			o, err := getObject(b, id)
			if err != nil {
				return err
			}
			if o == nil {
				missing = append(missing, id)
				continue
			}
			found = append(found, o)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading objects: %w", err)
	}
	return found, missing, nil
}

// GetEncoded is Get without decoding: the stored wire form of each object
// found (a lookaheadv1.Object, version included), ready to be sent as it is,
// read in one read transaction with one cursor. Found objects come in request
// order and missing ids in request order; an id asked for more than once is
// answered once. The bytes are copies the caller owns.
func (s *Store) GetEncoded(ids []string) (found [][]byte, missing []string, err error) {
	seen := make(map[string]struct{}, len(ids))
	found = make([][]byte, 0, len(ids))
	err = s.view(func(tx *bolt.Tx) error {
		r := cursorReader{c: tx.Bucket(bucketObjects).Cursor()}
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
			v := r.get(id)
			if v == nil {
				missing = append(missing, id)
				continue
			}
			// bbolt's bytes are valid only until the transaction ends.
			found = append(found, bytes.Clone(v))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading objects: %w", err)
	}
	return found, missing, nil
}

// cursorReader looks ids up with one cursor. Ids asked for in ascending
// order, as a level of related ids often is, are mostly reached by stepping
// forward a key or two rather than by a seek from the root.
type cursorReader struct {
	c    *bolt.Cursor
	prev string // the last id asked for
	k, v []byte // the cursor's position: the smallest key >= prev
	used bool
}

// maxSteps is how far get steps forward before it seeks instead.
const maxSteps = 2

// get returns the value of id, nil when there is none.
func (r *cursorReader) get(id string) []byte {
	switch {
	case !r.used || id <= r.prev:
		r.k, r.v = r.c.Seek([]byte(id))
	default:
		// No key lies between prev and k: when k >= id, k is the smallest
		// key >= id.
		for step := 0; r.k != nil && string(r.k) < id; step++ {
			if step == maxSteps {
				r.k, r.v = r.c.Seek([]byte(id))
				break
			}
			r.k, r.v = r.c.Next()
		}
	}
	r.used, r.prev = true, id
	if r.k == nil || string(r.k) != id {
		return nil
	}
	return r.v
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	return closedErr(s.db.View(fn))
}

// update runs fn in a write transaction and, once it has committed, wakes
// Changed waiters if it advanced the revision. It waits while a Load runs.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	s.loadMu.RLock()
	defer s.loadMu.RUnlock()
	return s.commit(fn)
}

// commit is update for a caller that holds loadMu.
func (s *Store) commit(fn func(*bolt.Tx) error) error {
	return closedErr(s.db.Update(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		rev := tx.Bucket(bucketChanges).Sequence()
		tx.OnCommit(func() { s.rev.Advance(rev) })
		return nil
	}))
}

func closedErr(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// getObject decodes the object stored under id; nil when there is none.
func getObject(b *bolt.Bucket, id string) (*graph.Object, error) {
	v := b.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	// proto.Unmarshal copies strings and bytes out of v, which bbolt only
	// keeps valid until the transaction ends.
	var p lookaheadv1.Object
	if err := proto.Unmarshal(v, &p); err != nil {
		return nil, fmt.Errorf("decoding object %q: %w", id, err)
	}
	return graphpb.FromProto(&p), nil
}

func putObject(b *bolt.Bucket, o *graph.Object) error {
	v, err := proto.Marshal(graphpb.ToProto(o))
	if err != nil {
		return fmt.Errorf("encoding object %q: %w", o.ID, err)
	}
	return b.Put([]byte(o.ID), v)
}
