# berth — the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
BIN      := bin
PKGS     := ./...
# CI has 2 cores; the race detector and the end-to-end tests share them.
TESTFLAGS ?= -race -count=1 -timeout 14m

.PHONY: all build bench-tools test test-deps chaos bench demo lint fuzz screenshots clean

all: build

# The product: master, worker, the berth CLI and the pi example.
build:
	$(GO) build -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/pi ./examples/pi

# The benchmark tool of docs/BENCHMARKS.md, apart from the product; its
# cluster measures run the binaries of make build.
bench-tools:
	$(GO) build -o $(BIN)/berthbench ./bench/cmd/berthbench
	$(GO) build -o $(BIN)/placebench ./bench/cmd/placebench

test: test-deps
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

# What the tests need beyond Go (nftables for the partition fault, chromium
# for the web UI's browser tests).
test-deps:
	scripts/test-deps.sh

# The fault-injection run: 100 faults on a 3-master cluster under load
# (about 10 minutes), then its report; CHAOS_FAULTS=n for another count.
CHAOS_FAULTS ?= 100
chaos: test-deps
	$(GO) test -count=1 -timeout 60m -run TestChaos -v ./e2e/chaos -args -chaos.faults=$(CHAOS_FAULTS) -chaos.report=$(CURDIR)/out/chaos-report.md
	@echo "report: out/chaos-report.md"

# Go micro-benchmarks (placement round at 100..100,000 workers).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Builds, starts a local cluster on 127.0.0.1, runs the pi job, prints its
# result and the cluster status, and stops everything it started.
demo: build
	scripts/demo.sh

# The web UI's screenshots in docs/img, taken by its browser test.
screenshots: test-deps
	BERTH_UI_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run TestWebUIInABrowser ./e2e

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRound -fuzztime 60s ./placement

clean:
	rm -rf $(BIN) out
