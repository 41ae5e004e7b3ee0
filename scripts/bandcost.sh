#!/usr/bin/env bash
# Issue 32: the candidate stage's CPU on a crawl, side by side (BENCHMARKS.md, "Issue 32:
# the candidate stage's cost"). Runs BenchmarkCrawlBands (cmd/crawler/bandcost_e2e_test.go)
# for WEB (corpus or bandweb), PAIRS pairs of one crawl per arm, each crawl a process of its
# own, the arms alternating and the first arm alternating from pair to pair (ABBA), and prints
# each pair's cpu-us/request, the paired ratios bands/filter and their median.
#   bash scripts/bandcost.sh corpus 5
set -euo pipefail
export HORSESHOE_BENCH_CORPUS=1
web=${1:-corpus}
pairs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)/crawler.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$root/cmd/crawler" && go test -tags e2e -c -o "$bin" .)
one() { # arm -> "cpu-us/request requests"
	(cd "$root/cmd/crawler" && "$bin" -test.run '^$' -test.bench "^BenchmarkCrawlBands\$/^$web\$/^$1\$" -test.benchtime 1x) |
		awk '/cpu-us\/request/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "cpu-us/request") c = $i; if ($(i+1) == "requests/crawl") r = $i }; print c, r }'
}
ratios=()
for p in $(seq 1 "$pairs"); do
	if ((p % 2)); then f=$(one filter); b=$(one bands); else b=$(one bands); f=$(one filter); fi
	read -r fc fr <<<"$f"
	read -r bc br <<<"$b"
	r=$(awk -v b="$bc" -v f="$fc" 'BEGIN { printf "%.3f", b / f }')
	ratios+=("$r")
	echo "pair $p: filter $fc, bands $bc cpu-us/request ($fr, $br requests), ratio $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "median paired ratio bands/filter: %.3f (%d pairs, range %s-%s)\n", m, NR, a[1], a[NR] }'
