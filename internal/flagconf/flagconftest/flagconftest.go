// Package flagconftest checks a command's settings the way an operator meets
// them: every setting refuses its bad values, given as a flag, an environment
// variable or a config file key, with a message naming it.
package flagconftest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/flagconf"
)

// Bad is a value a setting must refuse and a phrase of the message it gets.
type Bad = struct{ Value, Want string }

// Command describes a command under test.
type Command struct {
	Name      string // as it prefixes its messages: "sidecar: ..."
	EnvPrefix string // LOOKAHEAD_SIDECAR
	// Parse parses args (flags, then the environment and --config file) and
	// validates them, returning every setting as name=value.
	Parse func(args []string) (settings []string, err error)
	// CLI runs the command and returns its exit status.
	CLI func(args []string, stdout, stderr io.Writer) int
	// Bad lists, for every setting, the values it must refuse; nil for a
	// setting that takes any value (say why in a comment).
	Bad map[string][]Bad
	// Alone gives extra arguments that make a setting's bad value the only
	// problem (an empty --listen needs another listener to be alone).
	Alone map[string][]string
}

// EverySettingIsChecked fails for a setting the command has and Bad lacks,
// or the other way round.
func (c Command) EverySettingIsChecked(t *testing.T) {
	settings, err := c.Parse(nil)
	require.NoError(t, err, "the defaults are valid")
	var names []string
	for _, s := range settings {
		name, _, _ := strings.Cut(s, "=")
		names = append(names, name)
		_, ok := c.Bad[name]
		assert.True(t, ok, "--%s has no bad values listed: add them (or nil and why none)", name)
	}
	for name := range c.Bad {
		assert.Contains(t, names, name, "bad values listed for --%s, which %s does not have", name, c.Name)
	}
}

// BadSettingsAreRefused gives every bad value as a flag, as an environment
// variable and as a config file key: each way is refused by the same checks,
// with a message naming the setting, and --check-config exits 2 printing
// nothing on stdout.
func (c Command) BadSettingsAreRefused(t *testing.T) {
	for name, bad := range c.Bad {
		for _, b := range bad {
			t.Run(name+"="+b.Value, func(t *testing.T) {
				args := append([]string{"--" + name + "=" + b.Value}, c.Alone[name]...)
				_, err := c.Parse(args)
				require.Error(t, err, "flag")
				assert.ErrorContains(t, err, b.Want, "flag")
				if name == "config" {
					return // not a setting of the file or the environment
				}
				assert.ErrorContains(t, err, "-"+name, "the message names the flag")

				var stdout, stderr bytes.Buffer
				assert.Equal(t, 2, c.CLI(append(args, "--check-config"), &stdout, &stderr), "--check-config exits 2")
				assert.Contains(t, stderr.String(), c.Name+": ")
				assert.Contains(t, stderr.String(), b.Want)
				assert.Empty(t, stdout.String(), "nothing printed as if valid")

				if b.Value == "" {
					return // an empty variable or key is the default
				}
				rest := args[1:]
				t.Run("environment", func(t *testing.T) {
					env := flagconf.EnvName(c.EnvPrefix, name)
					t.Setenv(env, b.Value)
					_, err := c.Parse(rest)
					require.Error(t, err)
					assert.ErrorContains(t, err, b.Want)
					if !strings.Contains(err.Error(), "-"+name) {
						assert.ErrorContains(t, err, env, "the message names the setting")
					}
				})
				t.Run("config file", func(t *testing.T) {
					path := filepath.Join(t.TempDir(), c.Name+".yaml")
					require.NoError(t, os.WriteFile(path, []byte(name+": '"+b.Value+"'\n"), 0o600))
					_, err := c.Parse(append([]string{"--config", path}, rest...))
					require.Error(t, err)
					assert.ErrorContains(t, err, b.Want)
					assert.ErrorContains(t, err, name)
				})
			})
		}
	}
}

// Version checks that --version prints "NAME VERSION (revision REV, goX)"
// and exits 0, whatever the other settings say.
func (c Command) Version(t *testing.T) {
	t.Setenv(flagconf.EnvName(c.EnvPrefix, "log-level"), "loud") // not checked for --version
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, c.CLI([]string{"--version"}, &stdout, &stderr), stderr.String())
	assert.Regexp(t, `^`+c.Name+` \S+ \(revision \S+, go\S+\)\n$`, stdout.String())
}
