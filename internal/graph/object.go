// Package graph is lookahead's object model and the budgeted, cycle-safe
// breadth-first traversal every other package builds on.
package graph

import (
	"errors"
	"strconv"
)

// MaxIDBytes is the longest id lookahead accepts.
const MaxIDBytes = 1024

// Ref is one edge: the field of the referring object that holds ID.
type Ref struct {
	Field string
	ID    string
}

// Object is the unit the origin stores and the sidecar caches. It is treated
// as immutable once built: caches share one *Object between readers.
type Object struct {
	ID      string
	Version uint64 // grows on every change; 0 = unknown
	Type    string
	Refs    []Ref
	Payload []byte
	// Wire is the object encoded as a lookahead.v1.Object when it was
	// decoded from that encoding (graphpb.Decode): whoever sends the object
	// on sends these bytes rather than encoding it again. Its strings and
	// payload may be views of them. nil when the object was built otherwise;
	// a copy that changes a field must drop it.
	Wire []byte
}

// objectOverhead approximates the Go memory of an Object beyond its strings
// and payload: the struct, slice headers and per-ref string headers.
const (
	objectOverhead = 96
	refOverhead    = 32
)

// Size is the object's approximate memory cost in bytes, the unit caches
// charge against their budgets.
func (o *Object) Size() int64 {
	n := int64(objectOverhead + len(o.ID) + len(o.Type) + len(o.Payload))
	for _, r := range o.Refs {
		n += int64(refOverhead + len(r.Field) + len(r.ID))
	}
	return n
}

// SizeOf is the Size an object will have whose id, type and payload take
// n bytes together and whose refs, count of them, take refBytes bytes in
// their fields and ids: for checking what an object would cost before
// building it.
func SizeOf(n, refs int, refBytes int64) int64 {
	return int64(objectOverhead+n) + int64(refs)*refOverhead + refBytes
}

// Errors returned by ValidateID.
var (
	ErrEmptyID   = errors.New("graph: empty id")
	ErrIDTooLong = errors.New("graph: id longer than 1024 bytes")
	ErrNilObject = errors.New("graph: nil object")
)

// ValidateID reports whether id is acceptable as an object id.
func ValidateID(id string) error {
	switch {
	case id == "":
		return ErrEmptyID
	case len(id) > MaxIDBytes:
		return ErrIDTooLong
	}
	return nil
}

// Validate checks the object's own id and the ids of its refs.
func (o *Object) Validate() error {
	if o == nil {
		return ErrNilObject
	}
	if err := ValidateID(o.ID); err != nil {
		return err
	}
	for i, r := range o.Refs {
		if err := ValidateID(r.ID); err != nil {
			return &RefError{Index: i, Field: r.Field, Err: err}
		}
	}
	return nil
}

// RefError names the ref of an object that is invalid.
type RefError struct {
	Index int
	Field string
	Err   error
}

func (e *RefError) Error() string {
	return "ref " + strconv.Itoa(e.Index) + " (" + e.Field + "): " + e.Err.Error()
}

func (e *RefError) Unwrap() error { return e.Err }

// IDs returns the ids of objs, in order.
func IDs(objs []*Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.ID
	}
	return out
}
