#!/usr/bin/env bash
# Issue 30: peak RSS, CPU and wall of `report` and `export` on a big store,
# side by side: the crawler built from BASE_REF and the crawler of the work
# tree, alternating (the order rotates each round), RUNS rounds, medians.
#
#   scripts/bench-export.sh DATA [BASE_REF]     # default BASE_REF: main
#
# DATA is a crawl's data dir; make a big one from the corpus crawl with
#   go run ./internal/storefill/fillstore --src CORPUS-DATA --dst DATA --pages 200000
# Environment: HORSESHOE_BENCH_RUNS=3 (rounds); HORSESHOE_BENCH_BASE_BIN=PATH
# uses that crawler binary as the base instead of building BASE_REF;
# HORSESHOE_BENCH_CMDS selects the commands (default: all of report, jsonl,
# jsonl-main, warc); HORSESHOE_BENCH_BINS="head" runs one binary only. Prints one line per command and binary: medians of
# wall s, CPU s (user+sys), peak RSS MB, and CPU ms per record written.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${1:?usage: scripts/bench-export.sh DATA [BASE_REF]}
BASE_REF=${2:-main}
RUNS=${HORSESHOE_BENCH_RUNS:-3}
CMDS=${HORSESHOE_BENCH_CMDS:-report jsonl jsonl-main warc}
GO=${GO:-go}

RUN=$(mktemp -d "${TMPDIR:-/tmp}/horseshoe-bench-export-XXXXXX")
cleanup() {
	git worktree remove --force "$RUN/base-src" 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT

"$GO" build -o "$RUN/crawler-head" ./cmd/crawler
if [ -n "${HORSESHOE_BENCH_BASE_BIN:-}" ]; then
	cp "$HORSESHOE_BENCH_BASE_BIN" "$RUN/crawler-base"
else
	git worktree add --detach "$RUN/base-src" "$BASE_REF" >/dev/null 2>&1
	(cd "$RUN/base-src" && "$GO" build -o "$RUN/crawler-base" ./cmd/crawler)
fi

# args BIN CMD: the command line of CMD. The base extracts main text in
# every JSONL export; the head only when asked (--with-main-text), so
# "jsonl" is each binary's default export and "jsonl-main" (head only) the
# base's JSONL, main text included.
args() {
	case $2 in
	report) echo "report --data $DATA --out $RUN/out" ;;
	jsonl) echo "export --data $DATA --format jsonl --out $RUN/out" ;;
	jsonl-main)
		if [ "$1" = head ]; then echo "export --data $DATA --format jsonl --with-main-text --out $RUN/out"; else echo "export --data $DATA --format jsonl --out $RUN/out"; fi ;;
	warc) echo "export --data $DATA --format warc --out $RUN/out" ;;
	esac
}

for cmd in $CMDS; do
	for r in $(seq "$RUNS"); do
		order="base head"
		[ $((r % 2)) = 0 ] && order="head base"
		[ -n "${HORSESHOE_BENCH_BINS:-}" ] && order=$HORSESHOE_BENCH_BINS
		for bin in $order; do
			[ "$cmd/$bin" = jsonl-main/base ] && continue # the base's "jsonl"
			# shellcheck disable=SC2046
			/usr/bin/time -f "%e %U %S %M" -o "$RUN/time" "$RUN/crawler-$bin" $(args "$bin" "$cmd") 2>"$RUN/stderr" >/dev/null
			recs=$(grep -o 'wrote [0-9]*' "$RUN/stderr" | grep -o '[0-9]*' || echo 0)
			echo "$cmd $bin $(cat "$RUN/time") $recs" >>"$RUN/results"
		done
	done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-11s %-5s %8s %8s %9s %9s %14s\n' command bin wall_s cpu_s rss_MB records cpu_ms/record
awk '{ k=$1" "$2; n[k]++; w[k,n[k]]=$3; c[k,n[k]]=$4+$5; m[k,n[k]]=$6/1024; rec[k]=$7 }
function med(a, k, cnt,   i, j, t, v) { for (i=1;i<=cnt;i++) v[i]=a[k,i]; for (i=1;i<=cnt;i++) for (j=i+1;j<=cnt;j++) if (v[j]<v[i]) { t=v[i]; v[i]=v[j]; v[j]=t }; return v[int((cnt+1)/2)] }
END { for (k in n) { split(k, p, " "); cpu=med(c,k,n[k]); printf "%-11s %-5s %8.1f %8.1f %9.0f %9d %14s\n", p[1], p[2], med(w,k,n[k]), cpu, med(m,k,n[k]), rec[k], (rec[k]>0 ? sprintf("%.3f", cpu*1000/rec[k]) : "-") } }' "$RUN/results" | sort
