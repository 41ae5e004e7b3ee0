#!/bin/sh
# Issue 29: CPU per request of an in-process corpus crawl (crawl
# BenchmarkCorpusCrawl), old build against new, alternating, N pairs.
#   scripts/hotpath-pairs.sh OLD_TEST_BINARY NEW_TEST_BINARY [PAIRS]
# Build each binary with `go test -c -o BIN ./crawl/` in its worktree (copy
# crawl/hotpath_bench_test.go into an old worktree first). Prints each run's
# cpu-us/req and cpu-us/page and the medians and their ratio (new/old).
set -eu
old=$1 new=$2 pairs=${3:-5}
dir=$(cd "$(dirname "$0")/../crawl" && pwd)
out=$(mktemp)
run() { # name binary
	(cd "$dir" && "$2" -test.run='^$' -test.bench='^BenchmarkCorpusCrawl$' -test.benchtime=1x) |
		awk -v n="$1" '/^BenchmarkCorpusCrawl/ { for (i = 1; i < NF; i++) { if ($(i+1) == "cpu-us/req") r = $i; if ($(i+1) == "cpu-us/page") p = $i }
			print n, r, p }' | tee -a "$out"
}
i=0
while [ "$i" -lt "$pairs" ]; do
	if [ $((i % 2)) -eq 0 ]; then run old "$old"; run new "$new"; else run new "$new"; run old "$old"; fi
	i=$((i + 1))
done
awk '{ r[$1] = r[$1] " " $2; p[$1] = p[$1] " " $3 }
function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
END { printf "median cpu-us/req old %s new %s ratio %.3f\n", med(r["old"]), med(r["new"]), med(r["new"]) / med(r["old"])
	printf "median cpu-us/page old %s new %s ratio %.3f\n", med(p["old"]), med(p["new"]), med(p["new"]) / med(p["old"]) }' "$out"
rm -f "$out"
