// Command ociimage packs a static Go binary into an OCI image without a
// container engine or a base image: one layer holding the binary and a
// minimal /etc/passwd, a non-root numeric user, the entrypoint. It writes a
// tarball that is both an OCI image layout (skopeo's oci-archive:, podman
// load, containerd) and a docker-save archive (docker load, crane push).
//
//	ociimage -binary bin/image/sidecar -ref lookahead/sidecar:dev -out bin/sidecar.oci.tar \
//	  -expose 7070,7072 -cmd '--listen=0.0.0.0:7070 --metrics-listen=0.0.0.0:7072'
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var spec Spec
	var expose, cmd string
	flag.StringVar(&spec.Binary, "binary", "", "static binary to pack (required)")
	flag.StringVar(&spec.Ref, "ref", "", "image name and tag recorded in the tarball, e.g. lookahead/sidecar:dev (required)")
	flag.StringVar(&spec.Arch, "arch", "amd64", "GOARCH the binary was built for")
	flag.StringVar(&expose, "expose", "", "comma-separated TCP ports the image declares")
	flag.StringVar(&cmd, "cmd", "", "default arguments after the entrypoint, space-separated")
	out := flag.String("out", "", "tarball to write (required)")
	flag.Parse()
	spec.Cmd = strings.Fields(cmd)
	if expose != "" {
		spec.Expose = strings.Split(expose, ",")
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "ociimage: -out is required")
		os.Exit(2)
	}
	if err := Write(spec, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}
