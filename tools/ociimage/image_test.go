package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImages checks image tarballs: the ones LOOKAHEAD_IMAGES lists
// (tarball=binary name, comma-separated; `make images-test` sets it to what
// `make images` built) or else one it builds here from a small static binary.
func TestImages(t *testing.T) {
	images := map[string]string{}
	if list := os.Getenv("LOOKAHEAD_IMAGES"); list != "" {
		for _, item := range strings.Split(list, ",") {
			tarPath, bin, ok := strings.Cut(item, "=")
			require.True(t, ok, "LOOKAHEAD_IMAGES item %q: want tarball=binary", item)
			images[tarPath] = bin
		}
	} else {
		dir := t.TempDir()
		bin := filepath.Join(dir, "hello")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		tarPath := filepath.Join(dir, "hello.oci.tar")
		require.NoError(t, Write(Spec{Binary: bin, Ref: "example.dev/hello:test", Arch: runtime.GOARCH, Expose: []string{"7070"}, Cmd: []string{"--x=1"}}, tarPath))
		images[tarPath] = "hello"
	}
	for tarPath, bin := range images {
		t.Run(filepath.Base(tarPath), func(t *testing.T) { checkImage(t, tarPath, bin) })
	}
}

// checkImage reads the tarball as an OCI layout and as a docker-save archive
// and checks what a runtime needs: digests that match, the entrypoint, a
// numeric non-root user, and the binary in the layer, static.
func checkImage(t *testing.T, tarPath, bin string) {
	files := readTar(t, tarPath)
	assert.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(files["oci-layout"]))

	var index v1.IndexManifest
	require.NoError(t, json.Unmarshal(files["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	assert.NotEmpty(t, index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	var manifest v1.Manifest
	require.NoError(t, json.Unmarshal(blob(t, files, index.Manifests[0].Digest), &manifest))
	assert.Equal(t, types.OCIManifestSchema1, manifest.MediaType)
	var cfg v1.ConfigFile
	require.NoError(t, json.Unmarshal(blob(t, files, manifest.Config.Digest), &cfg))

	assert.Equal(t, []string{"/usr/local/bin/" + bin}, cfg.Config.Entrypoint)
	assert.Equal(t, User, cfg.Config.User)
	uid, _, _ := strings.Cut(cfg.Config.User, ":")
	assert.NotEqual(t, "0", uid, "runs as root")
	assert.Equal(t, "linux", cfg.OS)

	require.Len(t, manifest.Layers, 1)
	compressed := blob(t, files, manifest.Layers[0].Digest)
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	require.NoError(t, err)
	layer, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Len(t, cfg.RootFS.DiffIDs, 1)
	assert.Equal(t, cfg.RootFS.DiffIDs[0].Hex, sha256Hex(layer), "diff_id")

	rootfs := readTarBytes(t, layer)
	binary, ok := rootfs["usr/local/bin/"+bin]
	require.True(t, ok, "no /usr/local/bin/%s in the layer", bin)
	assert.Contains(t, string(rootfs["etc/passwd"]), ":65532:65532:")
	f, err := elf.NewFile(bytes.NewReader(binary))
	require.NoError(t, err, "the binary is not an ELF file")
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "PT_INTERP: the binary needs a dynamic loader the image does not have")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs, "DT_NEEDED: shared libraries the image does not have")

	var dm []dockerManifest
	require.NoError(t, json.Unmarshal(files["manifest.json"], &dm))
	require.Len(t, dm, 1)
	assert.Contains(t, files, dm[0].Config)
	for _, l := range dm[0].Layers {
		assert.Contains(t, files, l)
	}
	assert.Len(t, dm[0].RepoTags, 1)

	// What crane push and docker load read: the docker-save view.
	img, err := tarball.ImageFromPath(tarPath, nil)
	require.NoError(t, err)
	require.NoError(t, validate.Image(img), "docker-save view")
	// What skopeo's oci-archive: and containerd read: the OCI layout.
	dir := t.TempDir()
	for name, b := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	idx, err := layout.ImageIndexFromPath(dir)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx), "OCI layout view")
}

// blob returns the blob of digest h and checks its content hashes to it.
func blob(t *testing.T, files map[string][]byte, h v1.Hash) []byte {
	t.Helper()
	b, ok := files["blobs/"+h.Algorithm+"/"+h.Hex]
	require.True(t, ok, "blob %s missing", h)
	require.Equal(t, h.Hex, sha256Hex(b), "blob %s does not hash to its name", h)
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return readTarBytes(t, b)
}

// readTarBytes maps each regular file's name (without "./") to its content.
func readTarBytes(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimPrefix(h.Name, "./")] = data
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{name: "no binary", spec: Spec{Ref: "a/b:c"}, want: []string{"binary: empty path"}},
		{name: "bad ref", spec: Spec{Binary: "x", Ref: "UPPER/case:tag"}, want: []string{`ref "UPPER/case:tag"`}},
		{name: "both", spec: Spec{Ref: ""}, want: []string{"binary: empty path", `ref ""`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Image(tc.spec)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
