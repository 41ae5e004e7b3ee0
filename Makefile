# Horseshoe build targets. `make test` is what CI runs (.ci/run); the tiers
# and their times are in docs/TESTING.md.
GO        ?= go
BIN       ?= bin
PKGS      := ./...
STATICCHECK_VERSION ?= v0.8.2
N         ?= 10

# The packages of the end-to-end tier: those with a test file behind the e2e
# build tag, or a test the fast tier skips with -short.
E2E_PKGS  := $(sort $(patsubst %/,./%,$(dir $(shell grep -rlE --include='*_test.go' '^//go:build.*\be2e\b|testing\.Short\(\)' . 2>/dev/null | sed 's|^\./||'))))

# The exports scripts/test-deps.sh writes (the npm helpers' paths).
TEST_DEPS ?= $(or $(HORSESHOE_TEST_DEPS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/horseshoe)
WITH_TEST_ENV = if [ -f "$(TEST_DEPS)/test-env.sh" ]; then . "$(TEST_DEPS)/test-env.sh"; fi;

.PHONY: all build test test-deps test-fast test-soak fuzz-smoke test-race test-e2e flake check bench bench-scale bench-pages bench-smoke cross cross-build demo fuzz fmt vet staticcheck clean

all: build

build:
	$(GO) build -o $(BIN)/crawler ./cmd/crawler

# The whole suite, on a fresh machine too: installs what the tests need
# (scripts/test-deps.sh), then runs one step after another
# (scripts/test-all.sh): the fast tier under the race detector; vet, gofmt
# and the fast tier of the packages the end-to-end tier leaves out; the
# end-to-end tier (the crawler binary, the real corpus in ../shared/corpus,
# Redis, wget, node, Chromium, proxies; every test of its packages) and a
# smoke run of every benchmark; staticcheck and other platforms. It ends
# with each step's wall and CPU time. Fuzzing is `make fuzz` (a search that
# cannot be seeded does not gate a landing; its finds are kept as seeds in
# testdata/fuzz, which every go test runs).
test:
	$(MAKE) test-deps
	@MAKE="$(MAKE)" bash scripts/test-all.sh

# Debian packages (apt-get as root, else the line to run) and npm helpers.
test-deps:
	@bash scripts/test-deps.sh >/dev/null

# The fast tier: no tag, -short; pure packages, fakes, synctest, in-process
# crawls of small loopback webs.
test-fast:
	$(GO) test -short -count=1 -timeout 10m $(PKGS)

test-race:
	$(GO) test -race -short -count=1 -timeout 20m $(PKGS)

# The end-to-end tier: -tags e2e, without -short, over every package (the
# fast tests run again too, without the race detector: a few bounds hold
# only without it; the pure packages' tests fill the second core while
# cmd/crawler's crawls are the tail). Its output is what go test prints
# (each package's line, every failing test's whole output), then the
# slowest tests (internal/testsummary).
test-e2e:
	$(WITH_TEST_ENV) bash -o pipefail -c '$(GO) test -tags e2e -json -count=1 -timeout 45m $(PKGS) | $(GO) run ./internal/testsummary -top 40'

# The soak tier: measurements at millions of URLs that take minutes of both
# cores (the crawler's memory against a 3-million-URL frontier). Memory
# goals are measured, not timed in CI (docs/TESTING.md); `make bench` runs it.
test-soak:
	$(WITH_TEST_ENV) HORSESHOE_SOAK=1 $(GO) test -tags e2e -count=1 -timeout 30m -v -run '^TestScaleBoundedRSS$$' ./cmd/crawler

# The end-to-end tier N times (make flake N=10): each failure with its run,
# its last lines and its replay command.
flake:
	@$(WITH_TEST_ENV) GO="$(GO)" bash scripts/flake.sh $(N) $(E2E_PKGS)

fuzz-smoke:
	bash scripts/fuzz-smoke.sh

# Every benchmark once, after the end-to-end tier (not beside it: its load
# would stretch the waits of the stalled-worker and kill tests); each
# package in a go test of its own, two at a time (scripts/bench-smoke.sh:
# one go test runs benchmarks one package after another).
bench-smoke:
	@GO="$(GO)" bash scripts/bench-smoke.sh

# Other platforms: the module's packages type-check as they build there
# (internal/crosscheck, from source, the dependencies' declarations
# included: a few seconds, where `go build` for two platforms compiled every
# dependency from a cold cache for 290 s), and the portable code of dedup and
# parse (-tags purego: no assembly) passes their fast tier here too. The real
# builds, which also link, are `make cross-build`.
cross:
	$(GO) run ./internal/crosscheck windows/amd64 windows/arm64 darwin/arm64 darwin/amd64 freebsd/amd64 linux/arm64 linux/386
	$(GO) test -short -count=1 -tags purego ./dedup/ ./parse/

cross-build:
	GOOS=windows GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PKGS)
	GOOS=linux GOARCH=arm64 $(GO) vet ./dedup/ ./parse/

# Static checks and the fast tier under the race detector.
check: fmt vet staticcheck test-race

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# No file is built only without the e2e tag, so vet with it covers every file
# vet without it would.
vet:
	$(GO) vet -tags e2e $(PKGS)

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

# Issue 30's cost per page (scripts/bench-pages.sh): the crawler over the
# zipfweb (internal/zipfweb, 250 loopback hosts served from memory) at
# delay 0 to 10,000 and 100,000 pages (HORSESHOE_PAGES_1M=1: and 1,000,000),
# with CPU profiles; the table and the functions whose CPU a page grows
# into BENCHMARKS.md. About 10 minutes on 2 cores (the 1M crawl: 40 more).
bench-pages: build
	bash scripts/bench-pages.sh

# Build, serve the demo web on loopback, crawl it, print the report.
demo: build
	./$(BIN)/crawler demo --web testdata/demo

# Every fuzz target for FUZZTIME each (default 60s); make fuzz-smoke, 3s each.
fuzz:
	bash scripts/fuzz.sh

clean:
	rm -rf $(BIN) crawl-data
