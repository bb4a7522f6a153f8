package coherence

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/lookahead-dev/lookahead/internal/origin"
)

// ProbeClient is what a Prober asks of the origin.
type ProbeClient interface {
	// Check asks grpc.health.v1; errors.ErrUnsupported when the origin
	// does not implement it.
	Check(ctx context.Context) error
	// Describe asks for the origin's identity; errors.ErrUnsupported when
	// the origin does not implement it.
	Describe(ctx context.Context) (origin.Description, error)
	// Ping is a round trip every origin answers.
	Ping(ctx context.Context) error
}

// Prober checks an origin's health and identity, one Probe per health
// interval. An origin without grpc.health.v1 is probed with a round trip
// instead (Describe, else Ping): it is up when that succeeds. Every
// fallback is logged once, with its reason.
type Prober struct {
	c   ProbeClient
	id  *Identity
	log *slog.Logger

	noHealth, noDescribe, noIdentity sync.Once
}

// NewProber makes a prober that reports identities to id.
func NewProber(c ProbeClient, id *Identity, log *slog.Logger) *Prober {
	return &Prober{c: c, id: id, log: log}
}

// Probe returns nil when the origin is serving, and reports its identity.
func (p *Prober) Probe(ctx context.Context) error {
	err := p.c.Check(ctx)
	fallback := errors.Is(err, errors.ErrUnsupported)
	if fallback {
		p.noHealth.Do(func() {
			p.log.Warn("origin does not implement grpc.health.v1: its health is a successful round trip (Describe, else an empty BatchGet) instead", "err", err)
		})
	} else if err != nil {
		return err
	}
	d, derr := p.c.Describe(ctx)
	switch {
	case derr == nil:
		if d.DatasetID == "" {
			p.noIdentity.Do(func() {
				p.log.Warn("origin reports no dataset identity: if another dataset is served on its address, cached objects of the old one are only dropped when the revision goes backwards")
			})
		}
		p.id.Observe(d.DatasetID, "describe")
		return nil
	case errors.Is(derr, errors.ErrUnsupported):
		p.noDescribe.Do(func() {
			p.log.Warn("origin does not implement Describe: it has no dataset identity; if another dataset is served on its address, cached objects of the old one are only dropped when the revision goes backwards", "err", derr)
		})
		if fallback {
			return p.c.Ping(ctx)
		}
		return nil
	case fallback:
		return derr
	}
	return nil // health says serving; the identity waits for the next probe
}
