package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGet(t *testing.T) {
	stamped := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"},
		}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	tests := []struct {
		name      string
		v, rev    string
		read      func() (*debug.BuildInfo, bool)
		want      Info
		goVersion bool // GoVersion is the running toolchain's
	}{
		{"ldflags win", "v1.2.3", "deadbeef", stamped, Info{"v1.2.3", "deadbeef", "go1.99"}, false},
		{"build info fills the gaps", "", "", stamped, Info{"v0.3.0", "abc123-dirty", "go1.99"}, false},
		{"nothing known", "", "", none, Info{Version: "(devel)", Revision: "unknown"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := get(tt.v, tt.rev, tt.read)
			if tt.goVersion {
				assert.True(t, strings.HasPrefix(got.GoVersion, "go"), got.GoVersion)
				got.GoVersion = ""
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	Info{Version: "v1", Revision: "r", GoVersion: "go1.26"}.Register(reg)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP lookahead_build_info Always 1; its labels say which build is running.
# TYPE lookahead_build_info gauge
lookahead_build_info{goversion="go1.26",revision="r",version="v1"} 1
`)))
}
