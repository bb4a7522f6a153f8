package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the numeric user and group the image runs as: distroless'
// "nonroot", numeric so that Kubernetes' runAsNonRoot can verify it.
const User = "65532:65532"

// BinDir is where the binary lands in the image.
const BinDir = "/usr/local/bin"

// Spec describes one image.
type Spec struct {
	Binary string   // path of the static binary on this machine
	Ref    string   // name:tag recorded in the tarball
	Arch   string   // GOARCH; default amd64
	Expose []string // TCP ports
	Cmd    []string // default arguments
}

func (s Spec) validate() error {
	var errs []error
	if s.Binary == "" {
		errs = append(errs, errors.New("binary: empty path"))
	}
	if _, err := name.NewTag(s.Ref); err != nil {
		errs = append(errs, fmt.Errorf("ref %q: %w", s.Ref, err))
	}
	return errors.Join(errs...)
}

// Image builds the image s describes, on no base (scratch).
func Image(s Spec) (v1.Image, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	entry := path.Join(BinDir, path.Base(s.Binary))
	layerTar, err := rootfs(entry, bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "ociimage " + path.Base(s.Binary)}})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = s.Arch
	if cfg.Architecture == "" {
		cfg.Architecture = "amd64"
	}
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible
	cfg.Config.Entrypoint = []string{entry}
	cfg.Config.Cmd = s.Cmd
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/usr/local/bin"}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.licenses": "Apache-2.0"}
	if len(s.Expose) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.Expose {
			cfg.Config.ExposedPorts[p+"/tcp"] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cfg)
}

// rootfs is the layer's tar: the binary at entry, /etc/passwd and /etc/group
// naming the user (for tools that look it up), /tmp writable by all.
func rootfs(entry string, bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("tmp", 0o1777) },
		func() error { return dir("usr", 0o755) },
		func() error { return dir("usr/local", 0o755) },
		func() error { return dir("usr/local/bin", 0o755) },
		func() error { return file(entry[1:], 0o755, bin) },
		tw.Close,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("layer tar: %w", err)
		}
	}
	return buf.Bytes(), nil
}
