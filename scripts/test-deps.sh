#!/usr/bin/env bash
# test-deps.sh gets what the tests need from outside Go, so that `make test`
# runs the whole suite on a fresh machine (.ci/run calls `make test`):
#
#   - Debian packages: xz (to unpack the real corpus), wget (the independent
#     reference crawl of the content-lost measure), node and npm (warcio,
#     playwright-core, Readability on jsdom), chromium (the browser tests of
#     the HTML report), tinyproxy (package tinyproxy-bin: the binary without
#     the system service) and microsocks (the proxy tests), redis-server and
#     redis-cli (the shared crawl state's tests start real ones), nginx (the
#     scale-out bench's smoke run), taskset (util-linux). Missing ones are
#     installed with apt-get when this runs as root; otherwise the apt-get
#     line is printed and the tests that need them skip (fail under CI=true).
#   - npm packages, into a cache outside the repository (scripts/install-*.sh:
#     warcio, playwright-core, Readability and jsdom).
#
# It writes their paths as shell exports to $cache/test-env.sh (the Makefile
# sources it before running the tests) and prints that file's path on stdout.
# It is idempotent: with everything present it touches no network. It fails
# only under CI=true, where every tool must be there.
#
# The cache directory is $HORSESHOE_TEST_DEPS, or $XDG_CACHE_HOME/horseshoe,
# or $HOME/.cache/horseshoe.
set -uo pipefail
cd "$(dirname "$0")/.."

ci=false
[ "${CI:-}" = true ] && ci=true
cache="${HORSESHOE_TEST_DEPS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/horseshoe}"
mkdir -p "$cache"
env_file="$cache/test-env.sh"

need=()
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v wget >/dev/null 2>&1 || need+=(wget)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -x "${HORSESHOE_CHROMIUM:-/usr/bin/chromium}" ] || need+=(chromium)
command -v tinyproxy >/dev/null 2>&1 || need+=(tinyproxy-bin)
command -v microsocks >/dev/null 2>&1 || need+=(microsocks)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)

failed=0
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "test-deps: apt-get install ${need[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		if ! { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }; then
			echo "test-deps: apt-get install failed" >&2
			failed=1
		fi
	else
		echo "test-deps: missing tools; the tests that need them skip. Install them with:" >&2
		echo "  sudo apt-get install ${need[*]}" >&2
		failed=1
	fi
fi

# npm packages: each script prints the path the tests want.
: >"$env_file.tmp"
npm_dep() { # env script
	local out
	if out="$(bash "scripts/$2")"; then
		printf 'export %s=%q\n' "$1" "$out" >>"$env_file.tmp"
	else
		echo "test-deps: scripts/$2 failed; the tests that need $1 skip" >&2
		failed=1
	fi
}
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	npm_dep HORSESHOE_WARCIO install-test-deps.sh
	npm_dep HORSESHOE_PLAYWRIGHT install-browser-deps.sh
	npm_dep HORSESHOE_READABILITY install-readability-deps.sh
fi
mv "$env_file.tmp" "$env_file"
echo "$env_file"

if [ "$failed" != 0 ] && [ "$ci" = true ]; then
	echo "test-deps: CI=true needs every tool" >&2
	exit 1
fi
exit 0
