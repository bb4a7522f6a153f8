package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lookahead-dev/lookahead/internal/launch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSoakSmoke is the CI-sized soak: a few seconds of 8 clients.
func TestSoakSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := t.TempDir()
	require.NoError(t, launch.Build("../..", bin, "origin", "sidecar"))
	rep, err := Run(context.Background(), Config{Bin: bin, Clients: 8, Conns: 2, Duration: 3 * time.Second, Roots: 8})
	require.NoError(t, err)
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())

	assert.Empty(t, rep.Problems(50), "no failed request, goroutines bounded")
	for _, op := range []string{OpGet, OpGraph, OpPut} {
		require.Contains(t, rep.Ops, op)
		assert.Positive(t, rep.Ops[op].Requests, op)
	}
	assert.Positive(t, rep.Start.RSS)
	assert.LessOrEqual(t, rep.End.Goroutines, rep.Start.Goroutines+50)
	// The sidecar's own count agrees: a Put op is a Get and a Put, and each
	// connection made one warm-up Get.
	puts := float64(rep.Ops[OpPut].Requests)
	assert.Equal(t, float64(rep.Ops[OpGet].Requests)+puts+2, rep.SidecarRequests["Get OK"])
	assert.Equal(t, float64(rep.Ops[OpGraph].Requests), rep.SidecarRequests["GetGraph OK"])
	assert.Equal(t, puts, rep.SidecarRequests["Put OK"])
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Config
		wantErr string
	}{
		{name: "defaults", args: nil, want: Config{Bin: "bin", Clients: 64, Duration: time.Minute, Conns: 4, Roots: 50,
			Mix: DefaultMix, GraphDepth: 2, Timeout: 5 * time.Second}},
		{name: "extra process flags", args: []string{"--clients", "8", "--sidecar-arg=--prefetch-depth=2", "--sidecar-arg", "--no-expand", "--origin-arg=--latency=1ms"},
			want: Config{Bin: "bin", Clients: 8, Duration: time.Minute, Conns: 4, Roots: 50, Mix: DefaultMix, GraphDepth: 2, Timeout: 5 * time.Second,
				SidecarArgs: []string{"--prefetch-depth=2", "--no-expand"}, OriginArgs: []string{"--latency=1ms"}}},
		{name: "stray argument", args: []string{"now"}, wantErr: `unexpected arguments: ["now"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := Run(context.Background(), Config{Clients: -1, Mix: Mix{Get: -1}})
	assert.ErrorContains(t, err, "soak: no binaries directory")
	assert.ErrorContains(t, err, "soak: clients -1: must be at least 1")
	assert.ErrorContains(t, err, "weights must not be negative")
}
