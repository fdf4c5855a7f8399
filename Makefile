# Alfred's build. `make run` serves on 127.0.0.1:8080; `make test` installs and
# starts what the suite needs on a fresh Debian machine (as root), then runs it all.
GO      ?= go
BIN     ?= bin/alfred
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build run test test-forges e2e images unit bench lint clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) .

run: build
	./$(BIN) serve

# The whole suite: dependencies, a private Docker daemon, the agent CLIs, every test.
test:
	bash scripts/test.sh

# The end-to-end proof alone (make test runs it too): the built binary, a fake
# Forgejo over HTTP, the private Docker daemon and the real Claude Code.
e2e:
	bash scripts/test.sh ./e2e/

# The part of the suite that runs on the real Gitea and Forgejo (built and
# started by scripts/gitea.sh and scripts/forgejo.sh): the forge contract
# suite and the end-to-end scenario.
test-forges:
	bash scripts/test.sh -run 'RealForges' ./forges/forgejo/ ./e2e/

# The bot image and the agent image, built into the private Docker daemon of
# scripts/dockerd.sh on a local Debian base (no registry needed).
images:
	bash scripts/images.sh

# Unit tests only: no daemon, no CLIs (tests that need them skip under -short).
unit:
	$(GO) test -short -count=1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

# Benchmarks as reported in README.md (medians over 6 runs; compare with benchstat).
bench:
	bash scripts/bench.sh

clean:
	rm -rf bin
