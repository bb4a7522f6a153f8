package fetch

import "context"

// Admission is what a request must pass before it asks the origin for the
// ids the cache did not answer: it returns the function that gives its
// place back, or the error to answer the request with instead.
type Admission func(ctx context.Context) (release func(), err error)

type admissionKey struct{}

// WithAdmission returns ctx for a request whose misses must pass admit
// first. Get calls admit only when the request needs the origin, after its
// cache lookup, so that a request the cache answers whole never waits and
// the hit path does no lookup of its own for it.
func WithAdmission(ctx context.Context, admit Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, admit)
}

// admit passes the admission ctx carries, if any.
func admit(ctx context.Context) (release func(), err error) {
	if a, ok := ctx.Value(admissionKey{}).(Admission); ok {
		return a(ctx)
	}
	return func() {}, nil
}
