# syntax=docker/dockerfile:1
# lookahead's cache sidecar: a static binary on distroless, as a non-root user.
# Build from the repository root (the context is the module):
#   docker build -f deploy/docker/sidecar.Dockerfile -t lookahead/sidecar .
# deploy/docker/static_test.go runs this file's go build line and checks
# that the result is statically linked.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# go build fetches only the modules the binary imports (go.mod also lists
# the test suites' dependencies); the cache mounts keep them between builds.
COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/sidecar ./cmd/sidecar

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sidecar /usr/local/bin/sidecar
# Numeric, so that Kubernetes' runAsNonRoot can verify it (nonroot = 65532).
USER 65532:65532
EXPOSE 7070 7072
ENTRYPOINT ["/usr/local/bin/sidecar"]
# In a container the loopback defaults would reach nobody outside it.
CMD ["--listen=0.0.0.0:7070", "--metrics-listen=0.0.0.0:7072"]
