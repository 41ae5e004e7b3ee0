#!/usr/bin/env bash
# `make bench-pages`: issue 30's cost per page as the crawl grows. The
# crawler crawls the zipfweb (internal/zipfweb: 250 hosts on 127.40.x.y, Zipf
# text, 10% exact and 10% near copies, generated and served from memory by
# one process) at delay 0, to --max-pages 10,000 and 100,000 (and 1,000,000
# with HORSESHOE_PAGES_1M=1, about 40 minutes more), each on a fresh data dir
# and a web of 1.5x the pages, with --cpuprofile. It writes the table (wall,
# pages/s, CPU ms a page from the crawler's user+sys, peak RSS, store on disk)
# and the functions whose CPU per page grows most from the smallest crawl to
# the largest (go tool pprof -top of each), between the bench:pages markers
# of BENCHMARKS.md.
#
# Environment:
#   HORSESHOE_PAGES_SIZES="10000 100000"  the --max-pages of the crawls
#   HORSESHOE_PAGES_1M=1                   add a crawl of 1,000,000 pages
#   HORSESHOE_PAGES_SEED=1                 the web's seed
#   HORSESHOE_PAGES_WORKERS=16             --workers
#   HORSESHOE_BENCH_KEEP=1                 keep the run directory (profiles, logs)
#   HORSESHOE_BENCH_DOC=FILE               document to rewrite (default BENCHMARKS.md; empty: print only)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DOC=${HORSESHOE_BENCH_DOC-BENCHMARKS.md}
SIZES=${HORSESHOE_PAGES_SIZES:-10000 100000}
if [[ ${HORSESHOE_PAGES_1M:-} == 1 ]]; then SIZES="$SIZES 1000000"; fi
SEED=${HORSESHOE_PAGES_SEED:-1}
WORKERS=${HORSESHOE_PAGES_WORKERS:-16}
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

RUN=$(mktemp -d "${TMPDIR:-/tmp}/horseshoe-pages-XXXXXX")
SERVER_PID=
cleanup() {
	if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
	if [[ ${HORSESHOE_BENCH_KEEP:-} == 1 ]]; then echo "run directory kept: $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

echo "== bench-pages: building" >&2
"$GO" build -o bin/crawler ./cmd/crawler
"$GO" build -o "$RUN/zipfweb" ./internal/zipfweb/cmd/zipfweb
TICK=$(getconf CLK_TCK)

# cpu_ms PID: user+sys of a live process, in ms.
cpu_ms() { awk -v t="$TICK" '{print ($14 + $15) * 1000 / t}' "/proc/$1/stat"; }

for n in $SIZES; do
	web=$((n * 3 / 2))
	echo "== $n pages (a web of $web), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	"$RUN/zipfweb" -pages "$web" -hosts 250 -seed "$SEED" -seeds "$RUN/seeds-$n" >"$RUN/zipfweb-$n.out" 2>"$RUN/zipfweb-$n.err" &
	SERVER_PID=$!
	until grep -q '^ready' "$RUN/zipfweb-$n.out" 2>/dev/null; do
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$RUN/zipfweb-$n.err" >&2; exit 1; }
		sleep 0.2
	done
	srv0=$(cpu_ms "$SERVER_PID")
	load0=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -f '%M %U %S %e' -o "$RUN/time-$n" \
		bin/crawler crawl --data "$RUN/data-$n" --delay 0 --workers "$WORKERS" --max-pages "$n" \
		--allow-private-networks --quiet --cpuprofile "$RUN/cpu-$n.prof" --seeds "$RUN/seeds-$n" \
		>"$RUN/crawl-$n.out" 2>"$RUN/crawl-$n.err" || { tail -20 "$RUN/crawl-$n.err" >&2; exit 1; }
	load1=$(cut -d' ' -f1 /proc/loadavg)
	srv1=$(cpu_ms "$SERVER_PID")
	kill "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
	reqs=$(awk '/requests/ {print $2}' "$RUN/zipfweb-$n.err")
	pages=$(awk '/requests/ {print $4}' "$RUN/zipfweb-$n.err")
	store=$(du -sb "$RUN/data-$n" | cut -f1)
	# n pages web requests served_pages rss_kB user sys wall store server_cpu_ms load0 load1
	echo "$n $web $reqs $pages $(cat "$RUN/time-$n") $store $(awk -v a="$srv0" -v b="$srv1" 'BEGIN{print b-a}') $load0 $load1" >>"$RUN/results"
	"$GO" tool pprof -top -nodecount=400 bin/crawler "$RUN/cpu-$n.prof" 2>/dev/null >"$RUN/top-$n.txt"
	echo "   $(tail -1 "$RUN/results")" >&2
	rm -rf "$RUN/data-$n"
done

# focus_ms REGEX PROFILE [FLATREGEX]: ms of the samples with a frame matching
# REGEX; with FLATREGEX, only those samples' flat time in functions matching it.
focus_ms() {
	"$GO" tool pprof -top -nodefraction=0 -nodecount=100000 -focus="$1" bin/crawler "$2" 2>/dev/null |
		awk -v flat="${3:-}" '
		function ms(v) { sub(/,$/, "", v); if (v ~ /ms$/) return v + 0; if (v ~ /us$/) return v / 1000; if (v ~ /s$/) return v * 1000; return v + 0 }
		/^Showing nodes accounting for/ { total = ms($5) }
		flat != "" && $1 ~ /^[0-9.]+(s|ms|us)?$/ && NF >= 6 && $6 ~ flat { sum += ms($1) }
		END { print (flat == "" ? total + 0 : sum + 0) }'
}

first=$(head -1 "$RUN/results" | cut -d' ' -f1)
last=$(tail -1 "$RUN/results" | cut -d' ' -f1)
{
	echo "Crawls of the zipfweb (250 hosts, seed $SEED, a web of 1.5x the pages) at delay 0, --workers $WORKERS,"
	echo "one crawl each on a fresh data dir; load average (1 min) before and after each crawl in the last column."
	echo "CPU is the crawler process's user+sys; \"server CPU\" is the zipfweb process's over the same crawl."
	echo
	echo "| pages | wall | pages/s | CPU ms per page | server CPU ms per page | peak RSS | store | store per page | load |"
	echo "|---|---|---|---|---|---|---|---|---|"
	awk '{ n = $4; printf "| %d | %.1f s | %.0f | %.2f | %.3f | %.0f MB | %.0f MB | %.1f KB | %s-%s |\n",
		n, $8, n / $8, ($6 + $7) * 1000 / n, $10 / n, $5 / 1024, $9 / 1e6, $9 / n / 1e3, $11, $12 }' "$RUN/results"
	echo
	echo "Pages are the 200 responses the server gave (the crawl's --max-pages counts robots.txt too)."
	echo
	echo "CPU profile (go tool pprof -top, cumulative), in ms a page, $first pages to $last: the 25 functions whose"
	echo "cumulative CPU a page grows most, with their flat CPU a page and their share of the profile."
	echo
	echo "| function | cum ms/page $first | cum ms/page $last | growth | flat ms/page $first | flat ms/page $last | cum share $first | cum share $last |"
	echo "|---|---|---|---|---|---|---|---|"
	pf=$(awk -v s="$first" '$1 == s {print $4}' "$RUN/results")
	pl=$(awk -v s="$last" '$1 == s {print $4}' "$RUN/results")
	awk -v pf="$pf" -v pl="$pl" '
	function ms(v) { if (v ~ /ms$/) return v + 0; if (v ~ /us$/) return v / 1000; if (v ~ /s$/) return v * 1000; return v + 0 }
	FNR == 1 { f++ }
	$1 ~ /^[0-9.]+(s|ms|us)?$/ && $4 ~ /^[0-9.]+(s|ms|us)?$/ && NF >= 6 {
		name = $6; for (i = 7; i <= NF; i++) name = name " " $i
		p = (f == 1 ? pf : pl)
		flat[f, name] = ms($1) / p; cum[f, name] = ms($4) / p; share[f, name] = $5; seen[name] = 1
	}
	END {
		for (nm in seen) printf "%.4f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%s\n", cum[2, nm] - cum[1, nm], nm, cum[1, nm], cum[2, nm], flat[1, nm], flat[2, nm], (share[1, nm] == "" ? "-" : share[1, nm]), (share[2, nm] == "" ? "-" : share[2, nm])
	}' "$RUN/top-$first.txt" "$RUN/top-$last.txt" | sort -t$'\t' -k1,1gr | awk 'NR <= 25' |
		awk -F'\t' '{ printf "| `%s` | %s | %s | %+.3f | %s | %s | %s | %s |\n", $2, $3, $4, $1, $5, $6, $7, $8 }'
	echo
	echo "Issue 30's suspects: the CPU of the profile's samples with a matching function on the stack"
	echo "(go tool pprof -focus=REGEX; a sample counts once however many frames match), in ms a page."
	echo
	printf '| suspect | focus |'; for s in $SIZES; do printf ' ms/page %s |' "$s"; done; printf ' %s/%s |\n' "$last" "$first"
	printf '|---|---|'; for s in $SIZES; do printf -- '---|'; done; printf -- '---|\n'
	while IFS=';' read -r name re flat; do
		printf '| %s | `%s`%s |' "$name" "${re//|/\\|}" "${flat:+, flat \`${flat//|/\\|}\`}"
		for s in $SIZES; do
			p=$(awk -v s="$s" '$1 == s {print $4}' "$RUN/results")
			printf ' %.3f |' "$(awk -v v="$(focus_ms "$re" "$RUN/cpu-$s.prof" "$flat")" -v p="$p" 'BEGIN{print v / p}')"
		done
		a=$(focus_ms "$re" "$RUN/cpu-$first.prof" "$flat")
		b=$(focus_ms "$re" "$RUN/cpu-$last.prof" "$flat")
		awk -v a="$a" -v b="$b" -v pa="$pf" -v pb="$pl" 'BEGIN { if (a > 0) printf " %.2f |\n", (b / pb) / (a / pa); else print " - |" }'
	done <<-'SUSPECTS'
	whole profile;.
	the page's commit (crawl.Engine.commit, Badger's Update and the crawler's work inside it);crawl\.\(\*Engine\)\.commit$
	Badger point reads (Txn.Get);badger/v4\.\(\*Txn\)\.Get$
	Badger write path (value log, memtables);badger/v4\.\(\*DB\)\.(writeRequests|doWrites)
	Badger memtable flush;handleMemTableFlush|flushMemtable
	Badger compaction;levelsController\)\.[a-zA-Z]*[cC]ompact
	reads reaching the LSM tables (memtable misses);levelsController\)\.get
	seen-set reads;storage\.\(\*Tx\)\.SeenID|storage\.\(\*DB\)\.Seen$
	frontier disk queue;storage\.\(\*DB\)\.(LoadQueue|QueueHosts)|storage\.\(\*Tx\)\.(PutQueue|DeleteQueue)
	frontier, all;horseshoe/frontier\.
	full scans;storage\.\(\*DB\)\.scan$
	dedup, all;horseshoe/dedup\.
	dedup's map operations;horseshoe/dedup\.;runtime\.map|internal/runtime/maps
	GC (mark workers, assists, sweep);runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep)
	Go's scavenger (memory returned to the OS under the soft memory limit);runtime\.\(\*pageAlloc\)\.scavenge$
	parse;horseshoe/parse\.
	SUSPECTS
	echo
	echo "Each profile's total: $(for s in $SIZES; do grep -m1 '^Duration' "$RUN/top-$s.txt" | sed "s/^/$s pages: /"; done | paste -sd';' -)"
	echo
	echo "Reproduce: \`make bench-pages\` (scripts/bench-pages.sh; HORSESHOE_PAGES_1M=1 adds the 1M crawl)."
} >"$RUN/section.md"
cat "$RUN/section.md"

if [[ -n $DOC ]]; then
	if ! grep -qs '<!-- bench:pages:begin -->' "$DOC"; then
		printf '\n## Issue 30: cost per page from 10k to 100k pages\n\n<!-- bench:pages:begin -->\n<!-- bench:pages:end -->\n' >>"$DOC"
	fi
	awk -v sec="$RUN/section.md" '
		/<!-- bench:pages:begin -->/ { print; while ((getline l < sec) > 0) print l; skip = 1; next }
		/<!-- bench:pages:end -->/ { skip = 0 }
		!skip' "$DOC" >"$DOC.tmp" && mv "$DOC.tmp" "$DOC"
	echo "wrote $DOC" >&2
fi
