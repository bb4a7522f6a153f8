package flagconf

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type settings struct {
	listen string
	depth  int
	ttl    time.Duration
	watch  bool
	fields string
	config string
}

func newFlags() (*flag.FlagSet, *settings) {
	s := &settings{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&s.listen, "listen", "127.0.0.1:7070", "")
	fs.IntVar(&s.depth, "prefetch-depth", 3, "")
	fs.DurationVar(&s.ttl, "ttl", 0, "")
	fs.BoolVar(&s.watch, "watch", true, "")
	fs.StringVar(&s.fields, "prefetch-fields", "", "")
	fs.StringVar(&s.config, "config", "", "")
	return fs, s
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "listen: 0.0.0.0:1\nprefetch-depth: 7\nttl: 30s\nwatch: false\nprefetch-fields: [a, b]\n")
	tests := []struct {
		name string
		args []string
		env  []string
		want settings
	}{
		{name: "defaults", want: settings{listen: "127.0.0.1:7070", depth: 3, watch: true}},
		{name: "file", args: []string{"--config", file},
			want: settings{listen: "0.0.0.0:1", depth: 7, ttl: 30 * time.Second, fields: "a,b", config: file}},
		{name: "env beats file", args: []string{"--config", file}, env: []string{"LOOKAHEAD_PREFETCH_DEPTH=9", "PATH=/bin"},
			want: settings{listen: "0.0.0.0:1", depth: 9, ttl: 30 * time.Second, fields: "a,b", config: file}},
		{name: "flag beats env and file", args: []string{"--config", file, "--prefetch-depth", "1"},
			env:  []string{"LOOKAHEAD_PREFETCH_DEPTH=9", "LOOKAHEAD_WATCH=true"},
			want: settings{listen: "0.0.0.0:1", depth: 1, ttl: 30 * time.Second, watch: true, fields: "a,b", config: file}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, s := newFlags()
			require.NoError(t, fs.Parse(tt.args))
			require.NoError(t, Apply(fs, s.config, tt.env, "LOOKAHEAD", "config"))
			assert.Equal(t, tt.want, *s)
		})
	}
}

func TestErrorsNameTheSetting(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  []string
		want []string
	}{
		{name: "unknown key", file: "prefetch-dept: 3\n", want: []string{`unknown key "prefetch-dept"`}},
		{name: "bad value in file", file: "ttl: soon\n", want: []string{"ttl", `"soon"`}},
		{name: "nested value", file: "listen: {a: 1}\n", want: []string{"listen", "want a scalar"}},
		{name: "not yaml", file: "listen: [\n", want: []string{"c.yaml"}},
		{name: "unknown variable", env: []string{"LOOKAHEAD_NOPE=1"}, want: []string{"LOOKAHEAD_NOPE: no such setting"}},
		{name: "bad variable", env: []string{"LOOKAHEAD_PREFETCH_DEPTH=deep"}, want: []string{"LOOKAHEAD_PREFETCH_DEPTH", `"deep"`}},
		{name: "config key cannot name a config", file: "config: other.yaml\n", want: []string{`unknown key "config"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, _ := newFlags()
			require.NoError(t, fs.Parse(nil))
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			err := Apply(fs, path, tt.env, "LOOKAHEAD", "config")
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	fs, _ := newFlags()
	assert.Error(t, Apply(fs, filepath.Join(t.TempDir(), "missing.yaml"), nil, "LOOKAHEAD"))
}

func TestEmptyFileIsNoSettings(t *testing.T) {
	fs, s := newFlags()
	require.NoError(t, Apply(fs, writeFile(t, ""), nil, "LOOKAHEAD"))
	assert.Equal(t, 3, s.depth)
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", "a: 1\n", "a: [x, y]\nb: true\n", "a: {b: c}\n", "- 1\n", "a: [\n", "a: !!binary x\n", "? [a]\n: b\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if _, err := parse("fuzz.yaml", []byte(body)); err != nil && err.Error() == "" {
			t.Fatal("an error must say what is wrong")
		}
	})
}
