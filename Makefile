# lookahead — see README.md. Every target is what CI and the README run.
GO      ?= go
BUF     := $(GO) tool -modfile=tools/go.mod buf
BIN     := bin
# --version and lookahead_build_info say what was built: a tag (or commit)
# and the commit, stamped into internal/buildinfo.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/lookahead-dev/lookahead/internal/buildinfo.version=$(VERSION) -X github.com/lookahead-dev/lookahead/internal/buildinfo.revision=$(REVISION)

.PHONY: all build demo demo-postgres test check proto proto-check lint breaking fmt-check vet unit clients clean k8s-check prometheus-e2e rules

all: build

## build: compile every command into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

## demo: origin seeded with task trees + sidecars with prefetch off and on, two walks each
demo: build
	$(BIN)/demo --bin $(BIN)

## demo-postgres: throwaway PostgreSQL with the sample shop, the origin over it (origin --store postgres://…), sidecars with prefetch off and on, orders walked as a lazy ORM does
demo-postgres: build
	$(BIN)/demo-postgres --bin $(BIN)

## test: everything CI checks (formatting, vet, generated code, Go tests with -race, the Python/Node/Java clients)
test: check unit clients images-test

check: fmt-check vet lint breaking proto-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## breaking: buf breaking of the API against main (on a branch) or the previous commit (on main); tools/buf-breaking.sh
breaking:
	tools/buf-breaking.sh

## lint: buf lint of the API
lint:
	$(BUF) lint

## unit: go test with the race detector, ginkgo suites included
unit:
	$(GO) test -race -count=1 -timeout 15m ./...

## clients: the Python, Node and Java clients' tests against the real binaries
clients: build
	clients/test.sh

## proto: regenerate api/proto Go code (pinned tools in tools/go.mod), the Python stubs (pinned grpcio-tools) and the Node descriptor (pinned protobufjs)
proto:
	$(BUF) generate
	clients/python/generate.sh
	cd clients/node && npm ci --no-audit --no-fund --loglevel=error && node scripts/generate.js

## proto-check: fail when the committed generated code is stale
proto-check:
	@$(BUF) generate && git diff --quiet --exit-code -- api/proto || \
	  { echo "generated code in api/proto is stale: run 'make proto' and commit"; git diff --stat -- api/proto; exit 1; }
	clients/python/generate.sh --check

clean:
	rm -rf $(BIN)

## k8s-check: manifests, alert rules (promtool check + unit tests), dashboard, Dockerfiles' static build, metrics lint
k8s-check:
	$(GO) test -count=1 ./deploy/... ./internal/metrics/

## prometheus-e2e: real origin + sidecar scraped by a real Prometheus server
prometheus-e2e:
	$(GO) test -count=1 ./test/prometheus/

## rules: regenerate deploy/prometheus/prometheusrule.yaml from lookahead.rules.yml
rules:
	$(GO) test -count=1 ./deploy/k8s -run TestPrometheusRuleInSync -update

.PHONY: bench bench-quick

## bench: the benchmark workloads (W1-W4, see BENCHMARKS.md) at full size (19 min 36 s on 2 cores, needs redis-server): tables on stdout, the report results/report.md and plots in results/
bench: build
	$(GO) build -o $(BIN)/lookahead-bench ./bench/cmd/lookahead-bench
	$(BIN)/lookahead-bench -mode full -bin $(BIN) -out results -markdown results/report.md -require-redis

## bench-quick: the same workloads at reduced sizes, under 3 minutes
bench-quick: build
	$(GO) build -o $(BIN)/lookahead-bench ./bench/cmd/lookahead-bench
	$(BIN)/lookahead-bench -mode quick -bin $(BIN) -out results -markdown results/report.md

.PHONY: images images-test

IMAGE_REPO ?= localhost/lookahead
IMAGE_TAG  ?= dev
OCIIMAGE   := cd tools && $(GO) run ./ociimage -arch $$($(GO) env GOARCH)

## images: sidecar, origin and example-app as OCI image tarballs in bin/ (*.oci.tar), built without a container engine or base image (deploy/README.md)
images:
	@mkdir -p $(BIN)/image
	GOOS=linux CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/image/ ./cmd/sidecar ./cmd/origin ./examples/app
	$(OCIIMAGE) -binary $(abspath $(BIN))/image/sidecar -ref $(IMAGE_REPO)/sidecar:$(IMAGE_TAG) -out $(abspath $(BIN))/sidecar.oci.tar \
	  -expose 7070,7072 -cmd '--listen=0.0.0.0:7070 --metrics-listen=0.0.0.0:7072'
	$(OCIIMAGE) -binary $(abspath $(BIN))/image/origin -ref $(IMAGE_REPO)/origin:$(IMAGE_TAG) -out $(abspath $(BIN))/origin.oci.tar \
	  -expose 7071,7073 -cmd '--listen=0.0.0.0:7071 --metrics-listen=0.0.0.0:7073 --data=/data'
	$(OCIIMAGE) -binary $(abspath $(BIN))/image/app -ref $(IMAGE_REPO)/example-app:$(IMAGE_TAG) -out $(abspath $(BIN))/example-app.oci.tar \
	  -expose 8080

## images-test: build the images and check their contents (entrypoint, non-root user, static binary, digests)
images-test: images
	cd tools && LOOKAHEAD_IMAGES=$(abspath $(BIN))/sidecar.oci.tar=sidecar,$(abspath $(BIN))/origin.oci.tar=origin,$(abspath $(BIN))/example-app.oci.tar=app \
	  $(GO) test -count=1 ./ociimage
