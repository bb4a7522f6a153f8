package store

import "errors"

// Errors of stores other than this one (the PostgreSQL backend) that the
// origin server turns into status codes.
var (
	// ErrUnavailable means the store's database cannot be reached; a retry
	// may succeed once it is back.
	ErrUnavailable = errors.New("store: database unavailable")
	// ErrCompacted means the changes asked for are older than the oldest
	// the store still keeps: the caller must start over from the current
	// revision.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrReadOnly means the object cannot be written through this store.
	ErrReadOnly = errors.New("store: read-only")
	// ErrInvalid means the object or id cannot be stored as given.
	ErrInvalid = errors.New("store: invalid object")
)
