#!/usr/bin/env bash
# The store per page (issue 30): crawl the real corpus, served by nginx on
# loopback, with two builds of the crawler, alternating, and print the data
# dir's size (after the crawl closed it) over the requests nginx answered.
#
#   bash scripts/bench-store.sh OLD_BINARY NEW_BINARY [RUNS] [PORT]
#
# The corpus is served on PORT (default 18080), not 80: its port-less
# absolute links to other hosts then fail, the same way for both builds.
set -euo pipefail
old=${1:?old crawler binary}
new=${2:?new crawler binary}
runs=${3:-3}
port=${4:-18080}
run=$(mktemp -d)
trap 'bash scripts/nginx-corpus.sh stop "$run/nginx" >/dev/null 2>&1 || true' EXIT
root=$(go run ./internal/benchreport/benchtool corpus)
awk -F'\t' -v port="$port" '!/^#/ && NF >= 2 { print "http://" $1 ":" port $2 }' "${HORSESHOE_SHARED:-/work/shared}/corpus/MANIFEST.tsv" >"$run/seeds"
bash scripts/nginx-corpus.sh start "$root" "$run/nginx" "$port" >"$run/nginx.out" 2>&1
sleep 1
one() {
	local name=$1 bin=$2 data="$run/data"
	rm -rf "$data"
	bash scripts/nginx-corpus.sh reset "$run/nginx"
	# shellcheck disable=SC2046
	"$bin" crawl --data "$data" --delay 0 --workers 8 --quiet --allow-private-networks $(cat "$run/seeds") >/dev/null 2>"$run/$name.log" || true
	local req bytes
	req=$(bash scripts/nginx-corpus.sh count "$run/nginx")
	bytes=$(du -sb "$data" | cut -f1)
	printf '%s\trequests %d\tstore %d bytes\t%.0f bytes per request\n' "$name" "$req" "$bytes" "$(echo "$bytes / $req" | bc -l)"
}
for k in $(seq "$runs"); do
	if ((k % 2)); then one old "$old"; one new "$new"; else one new "$new"; one old "$old"; fi
done
