package prefetch

import "context"

// Whom a prediction is for. A job expands below objects an application
// read (its roots) or is waiting for (the ids CaughtUp was told of); its
// predictions are for the applications holding those. The context of a
// job's work says which ids it expands below, so that whoever hears of
// its predictions on the way to the origin (near.Hub.Fetching) or from the
// job itself (Config.Held) can tell: one sidecar's near-cache subscribers
// are each pushed their own application's predictions, not every one's.

type fromKey struct{}

// WithFrom returns ctx for speculative work expanding below ids: what the
// scheduler gives each job's work, and what work outside a Scheduler (a
// test) gives its own.
func WithFrom(ctx context.Context, ids []string) context.Context {
	return context.WithValue(ctx, fromKey{}, ids)
}

// From returns the ids the speculative work of ctx expands below: the
// objects read that scheduled its job, or those a demand caught up at;
// nil for a context that is not a job's.
func From(ctx context.Context) []string {
	ids, _ := ctx.Value(fromKey{}).([]string)
	return ids
}

// from is the ids j expands below (see From); nil for a refresh, which
// predicts nothing.
func (j *job) from() []string {
	if len(j.refresh) > 0 {
		return nil
	}
	ids := make([]string, 0, len(j.roots)+len(j.ahead))
	for _, o := range j.roots {
		ids = append(ids, o.ID)
	}
	return append(ids, j.ahead...)
}
