// Package docker_test checks the Dockerfiles without a Docker engine: it
// runs each Dockerfile's own go build line on this machine and checks the
// binary is what the distroless static image needs, a static ELF with no
// interpreter and no shared libraries, stripped and path-trimmed.
package docker_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const moduleDir = "../.."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, USER, ...
	args string
}

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	require.NoError(t, sc.Err())
	return out
}

// finalStage returns the instructions from the last FROM on.
func finalStage(ins []instruction) []instruction {
	for i := len(ins) - 1; i >= 0; i-- {
		if ins[i].cmd == "FROM" {
			return ins[i:]
		}
	}
	return nil
}

// buildCommand returns the shell command of the RUN instruction that runs
// go build, without RUN's own --mount options.
func buildCommand(t *testing.T, ins []instruction) string {
	t.Helper()
	var found []string
	for _, in := range ins {
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		fields := strings.Fields(in.args)
		for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			fields = fields[1:]
		}
		found = append(found, strings.Join(fields, " "))
	}
	require.Len(t, found, 1, "want exactly one RUN ... go build")
	return found[0]
}

func TestDockerfiles(t *testing.T) {
	moduleAbs, err := filepath.Abs(moduleDir)
	require.NoError(t, err)
	for _, bin := range []string{"sidecar", "origin"} {
		t.Run(bin, func(t *testing.T) {
			t.Parallel()
			ins := parseDockerfile(t, bin+".Dockerfile")
			final := finalStage(ins)
			require.NotEmpty(t, final)
			assert.Contains(t, []string{"gcr.io/distroless/static-debian12:nonroot", "scratch"}, final[0].args,
				"the runtime image has no libc: the binary must be static")
			var user, entrypoint string
			for _, in := range final {
				switch in.cmd {
				case "USER":
					user = in.args
				case "ENTRYPOINT":
					entrypoint = in.args
				}
			}
			assert.Regexp(t, `^[1-9][0-9]*(:[1-9][0-9]*)?$`, user, "a numeric non-root USER, so runAsNonRoot can be verified")
			assert.Equal(t, `["/usr/local/bin/`+bin+`"]`, entrypoint)

			build := buildCommand(t, ins)
			for _, want := range []string{"CGO_ENABLED=0", "go build", "-trimpath", "-ldflags='-s -w'", "-o /out/" + bin + " ", "./cmd/" + bin} {
				assert.Contains(t, build+" ", want)
			}
			_, err := os.Stat(bin + ".Dockerfile.dockerignore")
			assert.NoError(t, err, "keep the build context to what go build needs")

			// The same command, with the output redirected and the platform
			// arguments BuildKit would pass for this machine.
			out := t.TempDir()
			cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
			cmd.Dir = moduleDir
			cmd.Env = append(os.Environ(), "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH)
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s\n%s", build, b)
			path := filepath.Join(out, bin)

			checkStatic(t, path)
			content, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.False(t, bytes.Contains(content, []byte(moduleAbs+"/")), "-trimpath: the binary names the build directory %s", moduleAbs)

			if file, err := exec.LookPath("file"); err == nil {
				desc, err := exec.Command(file, "-b", path).Output()
				require.NoError(t, err)
				assert.Regexp(t, regexp.MustCompile(`statically linked|static-pie linked`), string(desc))
				assert.Contains(t, string(desc), "stripped")
				assert.NotContains(t, string(desc), "not stripped")
			}
			// It runs with nothing from the host: no loader, no libc.
			help, err := exec.Command(path, "-h").CombinedOutput()
			assert.NoError(t, err, "%s -h:\n%s", bin, help)
		})
	}
}

// checkStatic reads the ELF headers: no program interpreter (PT_INTERP),
// no dynamic section and so no DT_NEEDED libraries, no symbol table and
// no DWARF (-s -w).
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "PT_INTERP: the binary needs a dynamic loader")
		assert.NotEqual(t, elf.PT_DYNAMIC, p.Type, "PT_DYNAMIC: the binary is dynamically linked")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs, "DT_NEEDED")
	for _, s := range f.Sections {
		assert.NotEqual(t, ".symtab", s.Name, "-s: symbol table kept")
		assert.False(t, strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_"), "-w: DWARF section %s kept", s.Name)
	}
}
