# Horseshoe build targets. `make test` is what CI runs (.ci/run).
GO        ?= go
BIN       ?= bin
PKGS      := ./...
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build test check bench bench-scale bench-smoke cross demo fuzz fmt vet staticcheck clean

all: build

build:
	$(GO) build -o $(BIN)/crawler ./cmd/crawler

# The whole suite: unit tests, golden files, the end-to-end crawl of the real
# corpus (../shared/corpus), the demo, and a smoke run of every benchmark.
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 30m $(PKGS)
	$(MAKE) bench-smoke
	$(MAKE) cross
	bash scripts/fuzz-smoke.sh

bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x $(PKGS)

# Other platforms build, and the portable code of dedup and parse (-tags
# purego: no assembly) passes their tests here too.
cross:
	GOOS=windows GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PKGS)
	GOOS=linux GOARCH=arm64 $(GO) vet ./dedup/ ./parse/
	$(GO) test -count=1 -tags purego ./dedup/ ./parse/

# Static checks and the race detector.
check: fmt vet staticcheck
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	$(MAKE) bench-smoke

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	@command -v staticcheck >/dev/null 2>&1 || [ -x "$$($(GO) env GOPATH)/bin/staticcheck" ] || GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck $(PKGS)

# Benchmarks: Horseshoe against wget -r -np on the real corpus served by nginx,
# the CPU profile by stage, dedup and growth benchmarks; rewrites the figures
# in BENCHMARKS.md, then the scale-out table (bench-scale) (about 30 minutes;
# installs nginx and wget if missing).
bench: build
	bash scripts/bench.sh

# The scale-out table alone (issue 19): 1,000 generated loopback hosts, the
# crawler embedded and as 1 and 2 Redis workers pinned to cores, delay 0 and
# 5 s; rewrites its section of BENCHMARKS.md (about 20 minutes; `make bench`
# runs it at its end unless HORSESHOE_BENCH_SCALE=0).
bench-scale: build
	bash scripts/bench-scale.sh

# Build, serve the demo web on loopback, crawl it, print the report.
demo: build
	./$(BIN)/crawler demo --web testdata/demo

# Every fuzz target for FUZZTIME each (default 60s); make test runs them 3s each.
fuzz:
	bash scripts/fuzz.sh

clean:
	rm -rf $(BIN) crawl-data
