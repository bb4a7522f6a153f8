// Package lookahead is the Go client for a lookahead sidecar, with an
// optional near cache kept coherent by the sidecar.
//
// Dial connects to the sidecar next to the application (loopback or a unix
// socket). Get, BatchGet and GetGraph read objects; Put and Delete write
// through the sidecar to the origin; Invalidate drops cached copies.
//
//	c, err := lookahead.Dial("127.0.0.1:7070")
//	obj, st, err := c.Get(ctx, "task-0", nil)
//
// With WithNearCache the client keeps objects in its own process as well,
// up to a byte budget: a read of an object held there costs no call to the
// sidecar. The sidecar keeps that cache coherent over a Subscribe stream
// (invalidations for every id the client holds, and objects it predicts the
// client reads next); when the stream breaks the near cache is emptied at
// once and refilled after it reconnects. docs/near-cache.md states the
// protocol and its consistency guarantee.
//
// Objects returned by the client are shared with its near cache: treat them
// as immutable (proto.Clone one to modify it).
package lookahead
