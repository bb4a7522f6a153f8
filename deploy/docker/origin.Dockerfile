# syntax=docker/dockerfile:1
# lookahead's reference origin: a static binary on distroless, as a non-root user.
# Build from the repository root (the context is the module):
#   docker build -f deploy/docker/origin.Dockerfile -t lookahead/origin .
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
    GOOS=$TARGETOS GOARCH=$TARGETARCH CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/origin ./cmd/origin
# The store's directory, owned by the runtime user, for runs without a volume.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/origin /usr/local/bin/origin
COPY --from=build --chown=65532:65532 /out/data /data
# Numeric, so that Kubernetes' runAsNonRoot can verify it (nonroot = 65532).
USER 65532:65532
EXPOSE 7071 7073
ENTRYPOINT ["/usr/local/bin/origin"]
# In a container the loopback defaults would reach nobody outside it.
CMD ["--listen=0.0.0.0:7071", "--metrics-listen=0.0.0.0:7073", "--data=/data"]
