#!/usr/bin/env bash
# `make bench`: Horseshoe against wget on the real corpus served by nginx, the
# CPU profile by stage, the dedup micro/index benchmarks and the growth
# benchmarks; prints the tables and rewrites the figures section of
# BENCHMARKS.md. About 10-14 minutes on 2 cores with the 10 M growth step.
#
# Environment:
#   HORSESHOE_BENCH_RUNS=3        end-to-end runs per tool (medians are reported)
#   HORSESHOE_BENCHTIME=20000x    -benchtime of the dedup benchmarks
#   HORSESHOE_BENCH_10M=1 or 0    force the 10 M index growth step on or off (default: on when
#                                 16 GB are available; =1 also runs simhash search at 10 M, +10 min)
#   HORSESHOE_BENCH_KEEP=1        keep the run directory (profiles, logs, crawl data)
#   HORSESHOE_BENCH_DOC=FILE      document to rewrite (default BENCHMARKS.md; empty: print only)
#   HORSESHOE_BENCH_SCALE=0       skip the scale-out table at the end (scripts/bench-scale.sh, about 20 min)
#
# Needs root (or sudo) only to install nginx/wget/time when missing and to
# listen on port 80 of 127.0.0.x: the corpus links to its hosts without a
# port, so they must be served on 80 to resolve as written.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${HORSESHOE_BENCH_RUNS:-3}
BENCHTIME=${HORSESHOE_BENCHTIME:-20000x}
DOC=${HORSESHOE_BENCH_DOC-BENCHMARKS.md}
GO=${GO:-go}

sudo_if_needed() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v wget >/dev/null 2>&1 || missing+=(wget)
[[ -x /usr/bin/time ]] || missing+=(time)
if ((${#missing[@]})); then
	echo "installing ${missing[*]}" >&2
	sudo_if_needed apt-get update -q >/dev/null
	sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin"

RUN=$(mktemp -d "${TMPDIR:-/tmp}/horseshoe-bench-XXXXXX")
mkdir -p "$RUN/e2e"
NGINX_STATE="$RUN/nginx"
cleanup() {
	bash scripts/nginx-corpus.sh stop "$NGINX_STATE" || true
	if [[ ${HORSESHOE_BENCH_KEEP:-} == 1 ]]; then
		echo "run directory kept: $RUN" >&2
	else
		rm -rf "$RUN"
	fi
}
trap cleanup EXIT

echo "== building" >&2
"$GO" build -o bin/crawler ./cmd/crawler
"$GO" build -o "$RUN/benchtool" ./internal/benchreport/benchtool
ROOT=$("$RUN/benchtool" corpus)
"$RUN/benchtool" seeds >"$RUN/seeds"

if ss -ltn 2>/dev/null | awk '{print $4}' | grep -Eq '^127\.0\.0\.[0-9]+:80$|^0\.0\.0\.0:80$|^\*:80$'; then
	echo "port 80 on loopback is taken: stop that server first" >&2
	exit 1
fi
bash scripts/nginx-corpus.sh start "$ROOT" "$NGINX_STATE" 80 >"$RUN/nginx.out" 2>&1
count() { bash scripts/nginx-corpus.sh count "$NGINX_STATE"; }
reset() { bash scripts/nginx-corpus.sh reset "$NGINX_STATE"; }

run_wget() {
	local k=$1 out="$RUN/wget-out"
	rm -rf "$out"
	reset
	# Exit status 8 (some 404s among the corpus's links) is expected.
	/usr/bin/time -v -o "$RUN/e2e/wget-$k.time" \
		wget -r -np -l inf -E -nv -P "$out" -i "$RUN/seeds" 2>"$RUN/wget-$k.log" || true
	count >"$RUN/e2e/wget-$k.requests"
	find "$out" -type f -name '*.html' | wc -l >"$RUN/e2e/wget-$k.kept"
	# wget keeps every HTML page it fetches.
	cp "$RUN/e2e/wget-$k.kept" "$RUN/e2e/wget-$k.pages"
}

run_horseshoe() {
	local k=$1 data="$RUN/hs-data"
	rm -rf "$data"
	reset
	# shellcheck disable=SC2046
	/usr/bin/time -v -o "$RUN/e2e/horseshoe-$k.time" \
		bin/crawler crawl --data "$data" --delay 0 --workers 8 --quiet --cpuprofile "$RUN/cpu-$k.prof" \
		$(cat "$RUN/seeds") >"$RUN/horseshoe-$k.out" 2>"$RUN/horseshoe-$k.log"
	count >"$RUN/e2e/horseshoe-$k.requests"
	bin/crawler report --data "$data" --format json --out "$RUN/report-$k.json" >/dev/null
	"$RUN/benchtool" kept -report "$RUN/report-$k.json" >"$RUN/e2e/horseshoe-$k.kept"
	"$RUN/benchtool" fetched -report "$RUN/report-$k.json" >"$RUN/e2e/horseshoe-$k.pages"
}

echo "== end to end: $RUNS runs each, alternating (corpus $ROOT)" >&2
for k in $(seq "$RUNS"); do
	if ((k % 2)); then run_wget "$k"; run_horseshoe "$k"; else run_horseshoe "$k"; run_wget "$k"; fi
	echo "   run $k: wget $(cat "$RUN/e2e/wget-$k.requests") requests, horseshoe $(cat "$RUN/e2e/horseshoe-$k.requests") requests" >&2
done
bash scripts/nginx-corpus.sh stop "$NGINX_STATE"
"$GO" tool pprof -traces bin/crawler "$RUN/cpu-$RUNS.prof" >"$RUN/traces.txt" 2>/dev/null

echo "== dedup micro and index benchmarks (-benchtime $BENCHTIME)" >&2
"$GO" test -count=1 -run '^$' -bench 'Shingle|Sign2000|Minhash|SimhashPerFeature|SimhashSearch|PSMLookups' \
	-benchtime "$BENCHTIME" -timeout 30m ./dedup/ >"$RUN/bench-dedup.txt"
# The probe takes about a microsecond: 20,000 of them last 20 ms, and runs that
# short swung 0.7-2.1 µs on a quiet machine; 300,000 (about 0.3 s) agree
# within ±7%.
"$GO" test -count=1 -run '^$' -bench 'SupershingleProbe' \
	-benchtime 300000x -timeout 30m ./dedup/ >>"$RUN/bench-dedup.txt"
# Normalization with shingling on real pages' text (two pages, each step
# apart, then a quarter of the corpus: 20 MB a pass), and normalization alone
# (64 KB texts: fewer iterations).
"$GO" test -count=1 -run '^$' -bench 'NormalizeAndShingle$|NormalizeAndShingleStages|Tokenize' \
	-benchtime 2000x -timeout 30m ./internal/dedupeval/ ./parse/ >>"$RUN/bench-dedup.txt"
"$GO" test -count=1 -run '^$' -bench 'NormalizeAndShingleCorpus' \
	-benchtime 30x -timeout 30m ./internal/dedupeval/ >>"$RUN/bench-dedup.txt"
# The 10 M step holds about 10 GB live (sketches kept for verification, the
# exact map, the indexes): it runs when the machine has the memory, under a
# soft limit that keeps the GC from doubling it. HORSESHOE_BENCH_10M=0 skips it.
GROWTH_10M=${HORSESHOE_BENCH_10M:-}
if [ -z "$GROWTH_10M" ]; then
	avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
	if [ "${avail_kb:-0}" -ge $((16 * 1024 * 1024)) ]; then GROWTH_10M=1; else GROWTH_10M=0; fi
fi
if [ "$GROWTH_10M" = 1 ]; then
	echo "== growth: dedup index 10k -> 10M pages (GOMEMLIMIT 13GiB)" >&2
else
	echo "== growth: dedup index 10k -> 1M pages (10M skipped: needs 16 GB available)" >&2
fi
HORSESHOE_BENCH_10M=$GROWTH_10M GOMEMLIMIT=${GOMEMLIMIT:-13GiB} \
	"$GO" test -count=1 -run '^$' -bench 'IndexGrowth' -benchtime 20000x -timeout 60m ./dedup/ >"$RUN/bench-growth.txt"
echo "== growth: frontier + Badger 10k -> 3M queued URLs" >&2
"$GO" test -count=1 -run '^$' -bench 'FrontierGrowth' -benchtime 200x -timeout 30m ./crawl/ >"$RUN/bench-frontier.txt"
echo "== soak: the crawler's memory against a 3-million-URL frontier (make test-soak)" >&2
"${MAKE:-make}" --no-print-directory test-soak >"$RUN/soak.txt" || { cat "$RUN/soak.txt" >&2; exit 1; }

{
	echo "Shared machine: other engineers' builds and tests ran at the same time (load average $(cut -d' ' -f1-3 /proc/loadavg) at the end);"
	echo "figures vary by about ±20% between runs. nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), $(wget --version | head -1 | cut -d' ' -f1-3)."
} >"$RUN/notes.txt"
"$RUN/benchtool" render -dir "$RUN" -doc "$DOC" -go-version "$("$GO" version | cut -d' ' -f3)"
if [[ ${HORSESHOE_BENCH_SCALE:-1} != 0 ]]; then
	bash scripts/bench-scale.sh
fi
