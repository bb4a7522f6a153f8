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

// maxFrom bounds the ids a job's context names (From), and maxGateFrom
// those of the jobs one whole-levels Expand is for (wholeGate). Whoever
// routes a prediction checks each of them against each listener (the
// near hub: every subscriber's held ids, under its lock), so a request of
// many ids must not make every prediction of its job cost that many
// checks per listener. A job's roots are what one request read, by one
// application, so its first few name it as well as all of them do.
const (
	maxFrom     = 16
	maxGateFrom = 256
)

// from is the ids j expands below (see From), its first maxFrom; nil for
// a refresh, which predicts nothing.
func (j *job) from() []string {
	if len(j.refresh) > 0 {
		return nil
	}
	ids := make([]string, 0, min(len(j.roots)+len(j.ahead), maxFrom))
	for _, o := range j.roots {
		if len(ids) == maxFrom {
			return ids
		}
		ids = append(ids, o.ID)
	}
	return append(ids, j.ahead[:min(len(j.ahead), maxFrom-len(ids))]...)
}
