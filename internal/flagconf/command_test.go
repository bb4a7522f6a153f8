package flagconf

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseTool is a command line with one setting of its own besides the common ones.
func parseTool(t *testing.T, args ...string) (*Command, error) {
	t.Helper()
	c := &Command{Name: "tool"}
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("size", 3, "a setting")
	c.Register(fs)
	if err := c.Parse(fs, args); err != nil || c.Version {
		return c, err
	}
	if err := c.FinishLogLevel(); err != nil {
		return c, err
	}
	c.Record(fs)
	return c, nil
}

func TestCommandRun(t *testing.T) {
	failed := errors.New("origin gone")
	for _, tc := range []struct {
		name      string
		args      []string
		runErr    error
		status    int
		ran       bool
		stdout    string
		stderrHas string
	}{
		{name: "runs", status: 0, ran: true},
		{name: "run fails", runErr: failed, status: 1, ran: true, stderrHas: "tool stopped"},
		{name: "help", args: []string{"-h"}, status: 0},
		{name: "unknown flag", args: []string{"--nope"}, status: 2, stderrHas: "tool: flag provided but not defined: -nope"},
		{name: "stray argument", args: []string{"x"}, status: 2, stderrHas: `tool: unexpected arguments ["x"]`},
		{name: "bad log level", args: []string{"--log-level", "loud"}, status: 2, stderrHas: `tool: -log-level "loud": want debug, info, warn or error`},
		{name: "check config", args: []string{"--check-config", "--size", "5"}, status: 0, stdout: "config=\nlog-level=info\nsize=5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseTool(t, tc.args...)
			var stdout, stderr bytes.Buffer
			ran := false
			status := c.Run(&stdout, &stderr, err, func(ctx context.Context, log *slog.Logger) error {
				ran = true
				require.NotNil(t, log)
				return tc.runErr
			})
			assert.Equal(t, tc.status, status, stderr.String())
			assert.Equal(t, tc.ran, ran)
			if tc.stdout != "" {
				assert.Equal(t, tc.stdout, stdout.String())
			}
			assert.Contains(t, stderr.String(), tc.stderrHas)
		})
	}
}

func TestCommandVersionReadsNothingElse(t *testing.T) {
	t.Setenv("LOOKAHEAD_TOOL_NOPE", "1") // an unknown variable fails any other start
	c, err := parseTool(t, "--version")
	require.NoError(t, err)
	var stdout bytes.Buffer
	assert.Equal(t, 0, c.Run(&stdout, io.Discard, nil, nil))
	assert.Regexp(t, `^tool \S`, stdout.String())
}

func TestCommandReadsItsEnvironment(t *testing.T) {
	t.Setenv("LOOKAHEAD_TOOL_SIZE", "9")
	c, err := parseTool(t)
	require.NoError(t, err)
	assert.Contains(t, c.Settings, "size=9")
}
