package store

import (
	"crypto/rand"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketMeta holds the store's own facts; keyDatasetID is its identity.
var (
	bucketMeta   = []byte("meta")
	keyDatasetID = []byte("dataset_id")
)

// Identity is the identity of the store's dataset: a random UUID created
// with the store and kept in its file, so that it survives restarts and
// differs for every store created anew (a store that predates identities
// gets one at its first open). Revisions and versions are only comparable
// between two stores with the same Identity.
func (s *Store) Identity() string { return s.datasetID }

// loadDatasetID reads the store's identity, creating it on first use.
func loadDatasetID(tx *bolt.Tx) (string, error) {
	b, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return "", fmt.Errorf("bucket %s: %w", bucketMeta, err)
	}
	if v := b.Get(keyDatasetID); v != nil {
		return string(v), nil
	}
	id, err := newUUID()
	if err != nil {
		return "", err
	}
	if err := b.Put(keyDatasetID, []byte(id)); err != nil {
		return "", fmt.Errorf("storing dataset id: %w", err)
	}
	return id, nil
}

// newUUID returns a random (version 4) UUID in its text form.
func newUUID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("dataset id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
