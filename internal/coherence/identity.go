package coherence

import (
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Resetter drops everything the sidecar holds from an origin: called when
// what it holds can no longer be checked against the origin (another
// dataset, a history that went backwards). reason is for the log.
type Resetter interface {
	Reset(reason string)
}

// ResetFunc adapts a function to a Resetter.
type ResetFunc func(reason string)

// Reset calls f.
func (f ResetFunc) Reset(reason string) { f(reason) }

// Identity remembers the dataset identity an origin reports (Describe, or
// the header of its Watch stream) and, the first time it reports another
// one, resets the sidecar: cache flushed, change-stream position dropped
// (etcd's cluster-id rule: revisions of one dataset say nothing of
// another's). An origin that reports none is never reset by it.
type Identity struct {
	reset   Resetter
	changes prometheus.Counter
	log     *slog.Logger

	mu    sync.Mutex // guards the fields below
	known string     // empty until the origin first reports one
	hooks []func()   // run on every change, after the reset
}

// NewIdentity makes an identity that resets r on a change, counting each
// in changes.
func NewIdentity(r Resetter, changes prometheus.Counter, log *slog.Logger) *Identity {
	return &Identity{reset: r, changes: changes, log: log}
}

// Known is the identity last reported; empty when none was.
func (i *Identity) Known() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.known
}

// onChange adds f to what runs after each change.
func (i *Identity) onChange(f func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.hooks = append(i.hooks, f)
}

// Observe records the identity the origin reported through where (for the
// log). An empty id says nothing and is ignored. It reports whether the
// identity changed, in which case the reset and the hooks have run when it
// returns.
func (i *Identity) Observe(id, where string) bool {
	if id == "" {
		return false
	}
	i.mu.Lock()
	old := i.known
	if old == id {
		i.mu.Unlock()
		return false
	}
	i.known = id
	hooks := i.hooks
	i.mu.Unlock()
	if old == "" {
		i.log.Info("origin dataset", "dataset_id", id, "from", where)
		return false
	}
	i.reset.Reset("origin dataset changed")
	for _, f := range hooks {
		f()
	}
	i.changes.Inc() // after the reset: whoever sees the count sees the cache flushed
	i.log.Warn("origin serves another dataset: cache flushed, change stream restarted",
		"was", old, "now", id, "from", where)
	return true
}
