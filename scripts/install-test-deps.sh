#!/usr/bin/env bash
# install-test-deps.sh installs the test-only tools that Horseshoe's tests use
# from outside Go, into a fixed cache directory outside the repository, and
# prints the path of the warcio command line on stdout (everything else goes
# to stderr). It is idempotent: a second run finds the installation and does
# not touch the network.
#
#   HORSESHOE_WARCIO="$(scripts/install-test-deps.sh)" go test ./export/...
#
# Tools:
#   warcio 2.4.11 (npm): an independent WARC reader used by export's
#   TestWARCWithWarcio to check the WARC files we write.
#
# The cache directory is $HORSESHOE_TEST_DEPS, or $XDG_CACHE_HOME/horseshoe,
# or $HOME/.cache/horseshoe.
set -euo pipefail

WARCIO_VERSION=2.4.11
cache="${HORSESHOE_TEST_DEPS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/horseshoe}"
prefix="$cache/npm-warcio-$WARCIO_VERSION"
bin="$prefix/node_modules/.bin/warcio"
pkg="$prefix/node_modules/warcio/package.json"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-test-deps: node and npm are required" >&2
	exit 1
fi

installed() {
	[ -x "$bin" ] && [ -f "$pkg" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$pkg" "$WARCIO_VERSION"
}

if ! installed; then
	mkdir -p "$prefix"
	echo "install-test-deps: installing warcio@$WARCIO_VERSION into $prefix" >&2
	# --prefix keeps it out of the repository; no package-lock or audit noise.
	npm install --prefix "$prefix" --no-audit --no-fund --no-package-lock --loglevel=error \
		"warcio@$WARCIO_VERSION" >&2
	if ! installed; then
		echo "install-test-deps: warcio@$WARCIO_VERSION did not install into $prefix" >&2
		exit 1
	fi
fi
echo "$bin"
