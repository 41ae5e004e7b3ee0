#!/usr/bin/env bash
# bench-smoke.sh runs every benchmark once (-benchtime 1x, -tags e2e for
# Redis's), each package's benchmarks in a go test of their own, BENCH_P
# (default 2) at a time: one go test over many packages runs their
# benchmarks one package after another (cmd/go forces benchmarks serial),
# and a benchmark's set-up (building a million-entry index, a corpus crawl)
# leaves the other core idle. Each package's output is printed whole, in
# package order; exits 1 if any package failed, naming it.
#
#   GO=go bash scripts/bench-smoke.sh
set -uo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
P="${BENCH_P:-2}"
dir="$(mktemp -d /tmp/horseshoe-bench-XXXXXX)"
trap 'rm -rf "$dir"' EXIT

# The packages with a benchmark, in `go list` order.
mapfile -t pkgs < <(grep -rlE --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u | sed 's|^\./||; s|^\.$||' |
	while read -r d; do echo "./$d"; done)

# bench PKG N: runs PKG's benchmarks, its output in $dir/N.out and its exit
# status in $dir/N.code.
bench() {
	"$GO" test -tags e2e -count=1 -run '^$' -bench . -benchtime 1x "$1" >"$dir/$2.out" 2>&1
	echo $? >"$dir/$2.code"
}

i=0
for p in "${pkgs[@]}"; do
	i=$((i + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$P" ]; do
		wait -n
	done
	bench "$p" "$i" &
done
wait

fail=0
i=0
for p in "${pkgs[@]}"; do
	i=$((i + 1))
	cat "$dir/$i.out"
	if [ "$(cat "$dir/$i.code" 2>/dev/null)" != 0 ]; then
		echo "FAILED: benchmarks of $p" >&2
		fail=1
	fi
done
exit "$fail"
