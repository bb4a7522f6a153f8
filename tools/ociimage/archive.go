package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file of the archive.
type entry struct {
	name string
	data func() ([]byte, error)
}

// dockerManifest is one entry of a docker-save archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// Write builds the image s describes and writes it to out, replacing out
// only once the whole tarball is written.
func Write(s Spec, out string) error {
	img, err := Image(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".ociimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if err := writeArchive(tmp, img, s.Ref); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// writeArchive writes img as an OCI image layout (oci-layout, index.json,
// blobs/sha256/*) plus a docker-save manifest.json pointing at the same
// blobs, the way `docker save` of Docker 25 and later does.
func writeArchive(w io.Writer, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	files := []entry{
		{"oci-layout", func() ([]byte, error) { return []byte(`{"imageLayoutVersion":"1.0.0"}`), nil }},
		{blob(configDigest), func() ([]byte, error) { return rawConfig, nil }},
	}
	dm := dockerManifest{Config: blob(configDigest), RepoTags: []string{tag.Context().RepositoryStr() + ":" + tag.TagStr()}}
	if tag.RegistryStr() != name.DefaultRegistry {
		dm.RepoTags = []string{tag.Name()}
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return err
		}
		files = append(files, entry{blob(h), func() ([]byte, error) { return readAll(l.Compressed()) }})
		dm.Layers = append(dm.Layers, blob(h))
	}
	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Size:      int64(len(rawManifest)),
			Digest:    digest,
			Annotations: map[string]string{
				"io.containerd.image.name":          tag.Name(),
				"org.opencontainers.image.ref.name": tag.TagStr(),
			},
		}},
	}
	files = append(files,
		entry{blob(digest), func() ([]byte, error) { return rawManifest, nil }},
		entry{"index.json", func() ([]byte, error) { return json.Marshal(index) }},
		entry{"manifest.json", func() ([]byte, error) { return json.Marshal([]dockerManifest{dm}) }},
	)

	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	for _, f := range files {
		b, err := f.data()
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	return tw.Close()
}

func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
