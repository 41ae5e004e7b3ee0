#!/usr/bin/env bash
# flake.sh runs the end-to-end tier N times (make flake N=10) and, for each
# failing test of each run, prints the run number, the test, the last lines
# of its output and any line of it beginning "replay:" (the command that
# replays a seeded failure). Each run's `go test -json` goes to
# $FLAKE_DIR/run-<i>.json (default: a new directory under /tmp). Exits 1 if
# any run failed.
#
#   bash scripts/flake.sh N PKG...   (the Makefile passes $(E2E_PKGS))
set -uo pipefail
cd "$(dirname "$0")/.."

n="${1:-10}"
shift || true
[ $# -gt 0 ] || set -- ./...
GO="${GO:-go}"
dir="${FLAKE_DIR:-$(mktemp -d /tmp/horseshoe-flake-XXXXXX)}"
mkdir -p "$dir"
tail_lines="${FLAKE_TAIL:-15}"

failed_runs=0
for i in $(seq 1 "$n"); do
	log="$dir/run-$i.json"
	start=$(date +%s)
	$GO test -tags e2e -count=1 -timeout 45m -json "$@" >"$log" 2>"$dir/run-$i.stderr"
	code=$?
	echo "run $i/$n: exit $code in $(($(date +%s) - start)) s, log $log"
	[ "$code" = 0 ] && continue
	failed_runs=$((failed_runs + 1))
	# The failing tests, each with its last lines and replay lines.
	python3 - "$log" "$i" "$tail_lines" <<'EOF'
import json, re, sys
log, run, tail = sys.argv[1], sys.argv[2], int(sys.argv[3])
out, failed = {}, []
for line in open(log, errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    key = (e.get("Package", ""), e.get("Test", ""))
    if e.get("Action") == "output":
        out.setdefault(key, []).append(e.get("Output", ""))
    elif e.get("Action") == "fail":
        failed.append(key)
names = {k for k in failed if k[1]}
for pkg, test in failed:
    # A parent test fails with its subtest: report only the innermost.
    if test and any(o[0] == pkg and o[1].startswith(test + "/") for o in names):
        continue
    if not test and any(o[0] == pkg for o in names):
        continue
    lines = "".join(out.get((pkg, test), [])).splitlines()
    print(f"--- run {run}: FAIL {pkg} {test or '(package)'}")
    for l in lines[-tail:]:
        print("    " + l)
    for l in lines:
        # "replay:" begins the line, or the message after t.Log's "x_test.go:12: ".
        m = re.match(r"\s*(?:[\w.-]+\.go:\d+: )?(replay:.*)", l)
        if m:
            print("    " + m.group(1))
    if test:
        print(f"    rerun: go test -tags e2e -count=1 -run '^{test.split('/')[0]}$' {pkg}")
EOF
	[ -s "$dir/run-$i.stderr" ] && sed 's/^/    stderr: /' "$dir/run-$i.stderr" | tail -n "$tail_lines"
done
echo "flake: $failed_runs of $n runs failed (logs in $dir)"
[ "$failed_runs" = 0 ]
