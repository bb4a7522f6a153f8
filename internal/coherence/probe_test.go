package coherence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
)

// fakeProbe answers a Prober with fixed errors and a dataset id.
type fakeProbe struct {
	health, describe, ping error
	dataset                string
	pings                  int
}

func (f *fakeProbe) Check(context.Context) error { return f.health }
func (f *fakeProbe) Describe(context.Context) (origin.Description, error) {
	return origin.Description{DatasetID: f.dataset}, f.describe
}
func (f *fakeProbe) Ping(context.Context) error { f.pings++; return f.ping }

var (
	errNoRPC = fmt.Errorf("origin: %w", errors.ErrUnsupported)
	errDown  = errors.New("origin unavailable")
)

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		probe     fakeProbe
		wantErr   error
		wantPings int
		wantLog   string // logged once, however many probes
	}{
		{name: "health and identity", probe: fakeProbe{dataset: "A"}},
		{name: "health down", probe: fakeProbe{health: errDown, dataset: "A"}, wantErr: errDown},
		{name: "no health: Describe is the round trip", probe: fakeProbe{health: errNoRPC, dataset: "A"},
			wantLog: "does not implement grpc.health.v1"},
		{name: "no health, Describe fails: down", probe: fakeProbe{health: errNoRPC, describe: errDown}, wantErr: errDown,
			wantLog: "does not implement grpc.health.v1"},
		{name: "no health, no Describe: an empty BatchGet", probe: fakeProbe{health: errNoRPC, describe: errNoRPC}, wantPings: 2,
			wantLog: "does not implement Describe"},
		{name: "no health, no Describe, ping fails: down", probe: fakeProbe{health: errNoRPC, describe: errNoRPC, ping: errDown},
			wantErr: errDown, wantPings: 2},
		{name: "health without Describe: up, no ping", probe: fakeProbe{describe: errNoRPC}, wantLog: "does not implement Describe"},
		{name: "health up, Describe failing: up", probe: fakeProbe{describe: errDown}},
		{name: "empty identity", probe: fakeProbe{}, wantLog: "reports no dataset identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			rec := &recorder{}
			id := newIdentity(rec, metrics.New(prometheus.NewRegistry()))
			p := NewProber(&tc.probe, id, log)
			for range 2 {
				err := p.Probe(context.Background())
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
				}
			}
			assert.Equal(t, tc.wantPings, tc.probe.pings)
			if tc.wantLog != "" {
				assert.Equal(t, 1, strings.Count(logs.String(), tc.wantLog), logs.String())
			}
			if tc.probe.describe == nil && (tc.probe.health == nil || errors.Is(tc.probe.health, errors.ErrUnsupported)) {
				assert.Equal(t, tc.probe.dataset, id.Known())
			} else {
				assert.Empty(t, id.Known())
			}
			assert.Zero(t, rec.clears)
		})
	}
}

func TestProbeResetsOnAnotherDataset(t *testing.T) {
	rec := &recorder{}
	m := metrics.New(prometheus.NewRegistry())
	id := newIdentity(rec, m)
	restarted := 0
	id.onChange(func() { restarted++ })
	f := &fakeProbe{dataset: "A"}
	p := NewProber(f, id, discard)
	require.NoError(t, p.Probe(context.Background()))
	require.NoError(t, p.Probe(context.Background()))
	assert.Zero(t, rec.clears, "the first identity is learnt, not a change")

	f.dataset = "B"
	require.NoError(t, p.Probe(context.Background()))
	require.NoError(t, p.Probe(context.Background()))
	assert.Equal(t, 1, rec.clears)
	assert.Equal(t, 1, restarted)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.OriginDatasetChanges.WithLabelValues("default")))

	f.describe = errDown // no answer is not another identity
	require.NoError(t, p.Probe(context.Background()))
	assert.Equal(t, 1, rec.clears)
	assert.Equal(t, "B", id.Known())
}
