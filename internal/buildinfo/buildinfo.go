// Package buildinfo says which build of lookahead is running: the version and
// revision the Makefile sets with -ldflags, else Go's own build information.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at build time by the Makefile:
//
//	-ldflags "-X github.com/lookahead-dev/lookahead/internal/buildinfo.version=v1.2.3
//	          -X github.com/lookahead-dev/lookahead/internal/buildinfo.revision=<commit>"
var version, revision string

// Info identifies a build.
type Info struct {
	Version   string // a tag or git describe output; "(devel)" for a plain go build
	Revision  string // the commit, "unknown" when neither -ldflags nor the VCS stamp say
	GoVersion string // the Go toolchain that built it
}

// Get returns this binary's build information: what -ldflags set, and for
// what it left empty, what the Go toolchain recorded (module version,
// vcs.revision with a "-dirty" suffix for a modified tree).
func Get() Info {
	return get(version, revision, debug.ReadBuildInfo)
}

func get(v, rev string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: v, Revision: rev, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		info.GoVersion = bi.GoVersion
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			info.Revision = vcsRevision(bi.Settings)
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}

func vcsRevision(settings []debug.BuildSetting) string {
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// String is the line --version prints: "name VERSION (revision REV, GOVERSION)".
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// Register exports lookahead_build_info{version,revision,goversion}, always
// 1, on reg: join it to other series to see which build produced them.
func (i Info) Register(reg prometheus.Registerer) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lookahead_build_info",
		Help: "Always 1; its labels say which build is running.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	reg.MustRegister(g)
}
