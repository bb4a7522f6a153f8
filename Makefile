# lookahead — see README.md. Every target is what CI and the README run.
GO      ?= go
BUF     := $(GO) tool -modfile=tools/go.mod buf
BIN     := bin

.PHONY: all build demo test check proto proto-check lint fmt-check vet unit clean

all: build

## build: compile every command into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## demo: origin seeded with task trees + sidecars with prefetch off and on, two walks each
demo: build
	$(BIN)/demo --bin $(BIN)

## test: everything CI checks (formatting, vet, generated code, tests with -race)
test: check unit

check: fmt-check vet lint proto-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: buf lint of the API
lint:
	$(BUF) lint

## unit: go test with the race detector, ginkgo suites included
unit:
	$(GO) test -race -count=1 -timeout 15m ./...

## proto: regenerate api/proto Go code with the pinned tools in tools/go.mod
proto:
	$(BUF) generate

## proto-check: fail when the committed generated code is stale
proto-check:
	@$(BUF) generate && git diff --quiet --exit-code -- api/proto || \
	  { echo "generated code in api/proto is stale: run 'make proto' and commit"; git diff --stat -- api/proto; exit 1; }

clean:
	rm -rf $(BIN)
