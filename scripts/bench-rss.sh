#!/usr/bin/env bash
# Issue 29: peak RSS, CPU, wall and requests of the corpus crawl, side by side:
# wget -r -np, the crawler built from BASE_REF, and the crawler of the work
# tree, alternating (the order rotates each round), RUNS rounds, medians.
#
#   scripts/bench-rss.sh [BASE_REF]     # default BASE_REF: main
#
# Environment: HORSESHOE_BENCH_RUNS=5 (rounds); HORSESHOE_BENCH_BASE_BIN=PATH
# uses that crawler binary as the base instead of building BASE_REF. Needs port 80 on loopback,
# nginx, wget and /usr/bin/time, as scripts/bench.sh; writes nothing in the
# repository (the base is built from a temporary `git worktree add`).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE_REF=${1:-main}
RUNS=${HORSESHOE_BENCH_RUNS:-5}
GO=${GO:-go}
export PATH="$PATH:/usr/sbin"

RUN=$(mktemp -d "${TMPDIR:-/tmp}/horseshoe-bench-rss-XXXXXX")
NGINX_STATE="$RUN/nginx"
cleanup() {
	bash scripts/nginx-corpus.sh stop "$NGINX_STATE" || true
	git worktree remove --force "$RUN/base-src" 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT

echo "== building the work tree and $BASE_REF ($(git rev-parse --short "$BASE_REF"))" >&2
"$GO" build -o "$RUN/crawler-head" ./cmd/crawler
if [[ -n ${HORSESHOE_BENCH_BASE_BIN:-} ]]; then
	cp "$HORSESHOE_BENCH_BASE_BIN" "$RUN/crawler-base"
else
	git worktree add -q --detach "$RUN/base-src" "$BASE_REF"
	(cd "$RUN/base-src" && "$GO" build -o "$RUN/crawler-base" ./cmd/crawler)
fi
"$GO" build -o "$RUN/benchtool" ./internal/benchreport/benchtool
ROOT=$("$RUN/benchtool" corpus)
"$RUN/benchtool" seeds >"$RUN/seeds"

if ss -ltn 2>/dev/null | awk '{print $4}' | grep -Eq '^127\.0\.0\.[0-9]+:80$|^0\.0\.0\.0:80$|^\*:80$'; then
	echo "port 80 on loopback is taken: stop that server first" >&2
	exit 1
fi
bash scripts/nginx-corpus.sh start "$ROOT" "$NGINX_STATE" 80 >"$RUN/nginx.out" 2>&1

# run TOOL ROUND: one crawl; appends "TOOL maxrss_kB user sys wall requests" to $RUN/results.
run() {
	local tool=$1 k=$2 out="$RUN/out-$1"
	rm -rf "$out"
	bash scripts/nginx-corpus.sh reset "$NGINX_STATE"
	case $tool in
	wget)
		# Exit status 8 (some 404s among the corpus's links) is expected.
		/usr/bin/time -f '%M %U %S %e' -o "$RUN/$tool-$k.time" \
			wget -r -np -l inf -E -nv -P "$out" -i "$RUN/seeds" 2>"$RUN/$tool-$k.log" || true
		;;
	*)
		# shellcheck disable=SC2046
		/usr/bin/time -f '%M %U %S %e' -o "$RUN/$tool-$k.time" \
			"$RUN/crawler-$tool" crawl --data "$out" --delay 0 --workers 8 --quiet \
			$(cat "$RUN/seeds") >/dev/null 2>"$RUN/$tool-$k.log"
		;;
	esac
	# The last line: /usr/bin/time writes wget's exit status before it.
	echo "$tool $(tail -1 "$RUN/$tool-$k.time") $(bash scripts/nginx-corpus.sh count "$NGINX_STATE")" >>"$RUN/results"
	rm -rf "$out"
}

tools=(wget base head)
for k in $(seq "$RUNS"); do
	for i in 0 1 2; do
		run "${tools[(i + k) % 3]}" "$k"
	done
	echo "   round $k: $(tail -3 "$RUN/results" | awk '{printf "%s %.0f MB %.2f s CPU, %s requests; ", $1, $2/1024, $3+$4, $6}')" >&2
done

echo "Corpus crawl, $RUNS rounds, order rotating; medians (load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)."
echo "base = $BASE_REF ($(git rev-parse --short "$BASE_REF")), head = work tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ', modified'))."
echo
awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ n[$1]++; rss[$1, n[$1]] = $2 / 1024; cpu[$1, n[$1]] = $3 + $4; wall[$1, n[$1]] = $5; req[$1, n[$1]] = $6 }
END {
	split("wget base head", T, " ")
	for (t = 1; t <= 3; t++) {
		m = n[T[t]]
		for (i = 1; i <= m; i++) { a[i] = rss[T[t], i] } R[T[t]] = median(a, m)
		for (i = 1; i <= m; i++) { a[i] = cpu[T[t], i] } C[T[t]] = median(a, m)
		for (i = 1; i <= m; i++) { a[i] = wall[T[t], i] } W[T[t]] = median(a, m)
		for (i = 1; i <= m; i++) { a[i] = req[T[t], i] } Q[T[t]] = median(a, m)
	}
	print "| median | wget | base | head | head/base | head/wget |"
	print "|---|---|---|---|---|---|"
	printf "| peak RSS (MB) | %.1f | %.0f | %.0f | %.2f | %.1f |\n", R["wget"], R["base"], R["head"], R["head"] / R["base"], R["head"] / R["wget"]
	printf "| CPU s (user+sys) | %.2f | %.2f | %.2f | %.2f | %.2f |\n", C["wget"], C["base"], C["head"], C["head"] / C["base"], C["head"] / C["wget"]
	printf "| wall s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", W["wget"], W["base"], W["head"], W["head"] / W["base"], W["head"] / W["wget"]
	printf "| requests | %d | %d | %d | %.2f | %.2f |\n", Q["wget"], Q["base"], Q["head"], Q["head"] / Q["base"], Q["head"] / Q["wget"]
	print ""
	print "Each run (tool, peak RSS MB, CPU s, wall s, requests):"
}' "$RUN/results"
awk '{printf "    %s %.0f %.2f %.2f %s\n", $1, $2/1024, $3+$4, $5, $6}' "$RUN/results"
