package fetch

import "context"

// Admission is what a request must pass before it asks the origin for the
// ids the cache did not answer: it returns the function that gives its
// place back, or the error to answer the request with instead.
type Admission func(ctx context.Context) (release func(), err error)

// SetAdmission has every Get pass a before it asks the origin for the ids
// the cache did not answer: after its cache lookup, so that a request the
// cache answers whole never waits and the hit path does nothing for it.
// Set once, before serving; nil passes every request.
func (f *Fetcher) SetAdmission(a Admission) { f.admission.Store(&a) }

// admit passes the admission SetAdmission set, if any.
func (f *Fetcher) admit(ctx context.Context) (release func(), err error) {
	if a := f.admission.Load(); a != nil && *a != nil {
		return (*a)(ctx)
	}
	return func() {}, nil
}
