package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/prefetch"
)

func TestParseFlagsRefusesBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--origin", "127.0.0.1:1", "stray"}, `unexpected arguments ["stray"]`},
		{[]string{"--cache-bytes", "9223372036854775807KiB"}, `size "9223372036854775807": too large`},
		{[]string{"--cache-bytes", "-5MiB"}, `want a non-negative whole number`},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		require.Error(t, err, "%q", tt.args)
		assert.ErrorContains(t, err, tt.want)
	}
}

func TestByteSizeRoundTrips(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "256MiB": 256 << 20, "1GiB": 1 << 30, "2 KB": 2000, "8EiB0": -1} {
		var b byteSize
		err := b.Set(in)
		if want < 0 {
			assert.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		assert.Equal(t, want, int64(b), in)
		var again byteSize
		require.NoError(t, again.Set(b.String()))
		assert.Equal(t, b, again, "String() parses back")
	}
}

func TestCheckConfigReadsTheEnvironment(t *testing.T) {
	t.Setenv("LOOKAHEAD_SIDECAR_CACHE_BYTES", "64MiB")
	t.Setenv("LOOKAHEAD_SIDECAR_PREFETCH_DEPTH", "5")
	o, err := parseFlags([]string{"--check-config", "--prefetch-depth", "2"})
	require.NoError(t, err)
	assert.True(t, o.cmd.CheckConfig)
	assert.Contains(t, o.cmd.Settings, "cache-bytes=64MiB")
	assert.Contains(t, o.cmd.Settings, "prefetch-depth=2", "a flag beats the environment")
	assert.Contains(t, o.cmd.Settings, "listen=127.0.0.1:7070", "defaults are listed too")

	t.Setenv("LOOKAHEAD_SIDECAR_CACHE_BYTEZ", "1")
	_, err = parseFlags([]string{"--check-config"})
	assert.ErrorContains(t, err, "environment LOOKAHEAD_SIDECAR_CACHE_BYTEZ: no such setting")
}

func TestDepthOrFieldsSelectStatic(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want prefetch.Mode
	}{
		{name: "no setting: adaptive", args: nil, want: prefetch.ModeAdaptive},
		{name: "a depth: static", args: []string{"--prefetch-depth", "2"}, want: prefetch.ModeStatic},
		{name: "fields: static", args: []string{"--prefetch-fields", "a"}, want: prefetch.ModeStatic},
		{name: "an explicit mode wins", args: []string{"--prefetch-depth", "2", "--prefetch-mode", "adaptive"}, want: prefetch.ModeAdaptive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, o.sched.Mode)
		})
	}
}
