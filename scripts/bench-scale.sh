#!/usr/bin/env bash
# `make bench-scale` (and the end of `make bench`): issue 19's scale-out table.
# A generated web of 1,000 hosts on distinct loopback addresses (internal/scaleweb),
# one nginx, one redis-server; the crawler as one embedded process, one Redis
# worker and two Redis workers, each process pinned to its own core (taskset),
# at delay 0 (CPU-bound) and at a politeness delay; 3 runs each; pages/s over
# the steady part from nginx's access log. Rewrites the section between the
# bench:scale markers of BENCHMARKS.md. About 20 minutes on 2 cores (the 9
# politeness-bound crawls take 100 s each; HORSESHOE_SCALE_DELAYS=0,3s: 14 minutes).
#
# Environment:
#   HORSESHOE_SCALE_HOSTS=1000    hosts of the generated web
#   HORSESHOE_SCALE_PAGES=20      pages a host
#   HORSESHOE_SCALE_RUNS=3        runs of each mode at each delay
#   HORSESHOE_SCALE_DELAYS=0,5s   politeness delays (1,000 hosts / 5 s: a limit of 200 pages/s)
#   HORSESHOE_BENCH_KEEP=1        keep the run directory (web, nginx logs, crawler logs, scale.json)
#   HORSESHOE_SCALE_PROFILE=DIR   a CPU profile of every crawler process into DIR (go tool pprof bin/crawler FILE)
#   HORSESHOE_BENCH_DOC=FILE      document to rewrite (default BENCHMARKS.md; empty: print only)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DOC=${HORSESHOE_BENCH_DOC-BENCHMARKS.md}

sudo_if_needed() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
missing=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
if ((${#missing[@]})); then
	echo "installing ${missing[*]}" >&2
	sudo_if_needed apt-get update -q >/dev/null
	sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin"

RUN=$(mktemp -d "${TMPDIR:-/tmp}/horseshoe-scale-XXXXXX")
cleanup() {
	if [[ ${HORSESHOE_BENCH_KEEP:-} == 1 ]]; then
		echo "run directory kept: $RUN" >&2
	else
		rm -rf "$RUN"
	fi
}
trap cleanup EXIT

echo "== scale-out: building" >&2
"$GO" build -o bin/crawler ./cmd/crawler
"$GO" build -o "$RUN/benchtool" ./internal/benchreport/benchtool
"$RUN/benchtool" scale -crawler bin/crawler -dir "$RUN" -doc "$DOC" \
	-hosts "${HORSESHOE_SCALE_HOSTS:-1000}" -pages "${HORSESHOE_SCALE_PAGES:-20}" \
	-runs "${HORSESHOE_SCALE_RUNS:-3}" -delays "${HORSESHOE_SCALE_DELAYS:-0,5s}" \
	${HORSESHOE_SCALE_PROFILE:+-profile "$HORSESHOE_SCALE_PROFILE"}
