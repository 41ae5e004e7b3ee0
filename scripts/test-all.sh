#!/usr/bin/env bash
# test-all.sh is `make test` after test-deps: the whole suite, one step after
# another, each line of output prefixed with its step's chain, and a table
# of each step's wall time and CPU time at the end.
#
#   race:    the fast tier under the race detector
#   checks:  vet, gofmt
#   e2e:     the end-to-end tier, then a smoke run of every benchmark
#   static:  staticcheck, other platforms
#
# One step at a time: the end-to-end tier alone nearly fills both cores of a
# 2-core machine (about 1,100-1,200 CPU-s), so a step beside it takes its CPU
# and stretches its waits; session 15's two phases of checks beside the
# tiers (1,361-1,561 s) saved too little to be worth the load on tests whose
# bounds guard hangs (docs/TESTING.md).
#
# Fuzzing is not here: the fuzzer's random search cannot be seeded or
# replayed, and a test that lands must fail the same way twice. Its finds
# become seeds in testdata/fuzz (run by every go test); `make fuzz` and
# `make fuzz-smoke` run the search.
#
# A chain stops at its first failing step; the later chains run whatever
# fails, and the script exits 1 if any step failed, naming it. Every test
# runs exactly as `make <target>` runs it alone.
set -uo pipefail
cd "$(dirname "$0")/.."

MAKE="${MAKE:-make}"
exec 3>&1
dir="$(mktemp -d /tmp/horseshoe-test-XXXXXX)"

# step CHAIN TARGET: runs `make TARGET`, output prefixed with CHAIN; appends
# "TARGET real user sys status" to $dir/CHAIN.times.
step() {
	local chain=$1 target=$2 start end out user sys status
	start=$(date +%s.%N)
	# The subshell waits for the step, so its cutime and cstime (fields 16
	# and 17 of /proc/PID/stat, in clock ticks) are the step's CPU time; it
	# prints them with the step's exit status as its one line on stdout, the
	# step's own output going to fd 3 (this script's stdout, below).
	out=$( (
		"$MAKE" --no-print-directory "$target" 2>&1 | sed -u "s/^/[$chain] /" >&3
		s=${PIPESTATUS[0]}
		read -r -a f <"/proc/$BASHPID/stat" 2>/dev/null || f=()
		echo "${f[15]:-0} ${f[16]:-0} $s"
	))
	end=$(date +%s.%N)
	read -r user sys status <<<"$out"
	echo "$target $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.0f", b-a}') $user $sys $status" >>"$dir/$chain.times"
	return "$status"
}

chain() {
	local name=$1
	shift
	for t in "$@"; do
		if ! step "$name" "$t"; then
			echo "[$name] FAILED: make $t" >&2
			return 1
		fi
	done
}

start=$(date +%s)
fail=0
chain race test-race || fail=1
chain checks vet fmt || fail=1
chain e2e test-e2e bench-smoke || fail=1
chain static staticcheck cross || fail=1

tick=$(getconf CLK_TCK 2>/dev/null || echo 100)
echo
echo "step                 wall s    CPU s   (make test: $(($(date +%s) - start)) s after test-deps)"
for c in race checks e2e static; do
	[ -f "$dir/$c.times" ] || continue
	while read -r target wall user sys status; do
		printf '%-20s %6s %8.0f   %s%s\n' "$target" "$wall" "$(awk -v u="$user" -v s="$sys" -v t="$tick" 'BEGIN{print (u+s)/t}')" "$c" "$([ "$status" = 0 ] || echo ", FAILED")"
	done <"$dir/$c.times"
done
rm -rf "$dir"
exit "$fail"
