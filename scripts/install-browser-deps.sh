#!/usr/bin/env bash
# install-browser-deps.sh installs the npm package that drives a real browser
# in Horseshoe's tests, into a fixed cache directory outside the repository,
# and prints the package's directory on stdout (everything else goes to
# stderr). It is idempotent: a second run finds the installation and does not
# touch the network.
#
#   HORSESHOE_PLAYWRIGHT="$(scripts/install-browser-deps.sh)" go test ./cmd/crawler/ -run Browser
#
# Package:
#   playwright-core 1.65.1 (npm): the browser driver of cmd/crawler's
#   TestBrowser* tests. Only the driver: no browser is downloaded. The tests
#   launch Debian's chromium (/usr/bin/chromium, or $HORSESHOE_CHROMIUM).
#
# The cache directory is $HORSESHOE_TEST_DEPS, or $XDG_CACHE_HOME/horseshoe,
# or $HOME/.cache/horseshoe.
set -euo pipefail

PLAYWRIGHT_VERSION=1.65.1
cache="${HORSESHOE_TEST_DEPS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/horseshoe}"
prefix="$cache/npm-playwright-core-$PLAYWRIGHT_VERSION"
dir="$prefix/node_modules/playwright-core"
pkg="$dir/package.json"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-browser-deps: node and npm are required" >&2
	exit 1
fi

installed() {
	[ -f "$pkg" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$pkg" "$PLAYWRIGHT_VERSION"
}

if ! installed; then
	mkdir -p "$prefix"
	echo "install-browser-deps: installing playwright-core@$PLAYWRIGHT_VERSION into $prefix" >&2
	# --prefix keeps it out of the repository; no package-lock or audit
	# noise; playwright-core never downloads browsers, the variable makes
	# sure of it.
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$prefix" --no-audit --no-fund --no-package-lock \
		--loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" >&2
	if ! installed; then
		echo "install-browser-deps: playwright-core@$PLAYWRIGHT_VERSION did not install into $prefix" >&2
		exit 1
	fi
fi
echo "$dir"
