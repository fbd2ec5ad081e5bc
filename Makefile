# berth — the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
BIN      := bin
PKGS     := ./...
# CI has 2 cores; the race detector and the end-to-end tests share them.
TESTFLAGS ?= -race -count=1 -timeout 14m

.PHONY: all build bench-tools test test-deps chaos bench bench-spark demo demo-deps demo-pi lint fuzz screenshots clean dist image

# What --version prints and berth_build_info carries (internal/version):
# the nearest tag and the commits since (git describe), or devel; the
# commit itself comes from the build information (-buildvcs=auto, even
# where GOFLAGS turns it off).
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/berth-cluster/berth/internal/version
LDFLAGS     = -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).buildTime=$(BUILD_TIME)

all: build

# The product: master, worker, the berth CLI, the pi example, and Spark's
# cluster-manager plugin, bin/berth-spark.jar (Maven, against the pinned
# Spark 4.2.0; docs/SPARK.md).
build:
	$(GO) build -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/pi ./examples/pi
	SKIP_TESTS=1 spark/build.sh >/dev/null

# Tarballs and .deb packages (master, worker, CLI) for linux/amd64 and
# linux/arm64 in out/dist (docs/OPERATIONS.md); ARCHES=amd64 for one.
dist:
	VERSION='$(VERSION)' BUILD_TIME='$(BUILD_TIME)' scripts/dist.sh $(CURDIR)/out/dist

# The OCI images of the master and the worker, for linux/amd64 and
# linux/arm64, as an OCI layout in out/image, made without a container
# daemon (docs/OPERATIONS.md).
image:
	VERSION='$(VERSION)' BUILD_TIME='$(BUILD_TIME)' scripts/image.sh $(CURDIR)/out/image

# The benchmark tool of docs/BENCHMARKS.md, apart from the product; its
# cluster measures run the binaries of make build.
bench-tools:
	$(GO) build -o $(BIN)/berthbench ./bench/cmd/berthbench
	$(GO) build -o $(BIN)/placebench ./bench/cmd/placebench

test: test-deps
	spark/build.sh >/dev/null
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

# What the tests need beyond Go (nftables for the partition fault, chromium
# for the web UI's browser tests, the pinned pyspark and a JDK for Spark's).
test-deps:
	scripts/test-deps.sh

# The fault-injection run: 100 faults on a 3-master cluster under load,
# then its report; CHAOS_FAULTS=n for another count. Then 5 minutes of
# health checks under load, none of which may fail a healthy process.
CHAOS_FAULTS ?= 100
chaos: test-deps
	$(GO) test -count=1 -timeout 60m -run TestChaos -v ./e2e/chaos -args -chaos.faults=$(CHAOS_FAULTS) -chaos.report=$(CURDIR)/out/chaos-report.md
	BERTH_HEALTH_SOAK=5m $(GO) test -count=1 -run TestHealthNoFalsePositivesUnderLoad ./e2e
	@echo "report: out/chaos-report.md"

# Go micro-benchmarks (placement round at 100..100,000 workers).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# berth against Spark standalone, the same Spark jobs on the same workers,
# side by side in one run (bench/sparkcmp): start-up, worker loss, master
# failover, fragmentation, a 200-app burst. About 3.5 hours on 2 cores
# (the burst alone about 2): run it on a quiet machine. Report: out/spark-vs-standalone.md; figures in
# docs/BENCHMARKS.md.
bench-spark: build bench-tools
	@mkdir -p out
	SPARK_HOME="$$(scripts/spark-deps.sh)" $(BIN)/berthbench spark-vs-standalone --bin $(BIN) --out $(CURDIR)/out/spark-vs-standalone.md

# Installs what it needs when missing (demo-deps: a JDK, the pinned Spark,
# Maven), builds, starts a local TLS cluster on 127.0.0.x, runs a PySpark
# job on it with the pinned Spark while the leader is killed, prints
# Spark's result and the cluster status, and stops everything it started.
# The build runs once demo-deps is done (it needs Maven and the JDK).
# demo-pi: the Go pi example, without Spark.
demo: demo-deps
	$(MAKE) build
	scripts/demo.sh

# What make demo needs beyond Go (scripts/demo-deps.sh; root installs it).
demo-deps:
	scripts/demo-deps.sh

demo-pi: build
	scripts/demo-pi.sh

# The web UI's screenshots in docs/img, taken by its browser test.
screenshots: test-deps
	BERTH_UI_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run 'TestWebUIInABrowser|TestUIHealthInABrowser' ./e2e

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRound -fuzztime 60s ./placement

clean:
	rm -rf $(BIN) out
