#!/usr/bin/env bash
# install-readability-deps.sh installs Mozilla's Readability and the DOM it
# runs on in Node, into a fixed cache directory outside the repository, and
# prints the node_modules directory that holds them on stdout (everything
# else goes to stderr). It is idempotent: a second run finds the installation
# and does not touch the network.
#
#   HORSESHOE_READABILITY="$(scripts/install-readability-deps.sh)" go test ./export/ -run Mozilla
#
# Packages (npm):
#   @mozilla/readability 0.6.0: the reference that export's main text is
#   checked against (TestMainTextAgainstMozilla).
#   jsdom 26.1.0: the DOM Readability runs on outside a browser (26.1 is the
#   newest jsdom that runs on Node 18, Debian 12's nodejs).
#
# The cache directory is $HORSESHOE_TEST_DEPS, or $XDG_CACHE_HOME/horseshoe,
# or $HOME/.cache/horseshoe.
set -euo pipefail

READABILITY_VERSION=0.6.0
JSDOM_VERSION=26.1.0
cache="${HORSESHOE_TEST_DEPS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/horseshoe}"
prefix="$cache/npm-readability-$READABILITY_VERSION-jsdom-$JSDOM_VERSION"
modules="$prefix/node_modules"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "install-readability-deps: node and npm are required" >&2
	exit 1
fi

installed() {
	[ -f "$modules/@mozilla/readability/package.json" ] && [ -f "$modules/jsdom/package.json" ] &&
		node -e '
			const [m, rv, jv] = process.argv.slice(1);
			const ok = require(m + "/@mozilla/readability/package.json").version === rv &&
				require(m + "/jsdom/package.json").version === jv;
			process.exit(ok ? 0 : 1);' "$modules" "$READABILITY_VERSION" "$JSDOM_VERSION"
}

if ! installed; then
	mkdir -p "$prefix"
	echo "install-readability-deps: installing @mozilla/readability@$READABILITY_VERSION and jsdom@$JSDOM_VERSION into $prefix" >&2
	# --prefix keeps it out of the repository; no package-lock or audit noise.
	npm install --prefix "$prefix" --no-audit --no-fund --no-package-lock --loglevel=error \
		"@mozilla/readability@$READABILITY_VERSION" "jsdom@$JSDOM_VERSION" >&2
	if ! installed; then
		echo "install-readability-deps: the packages did not install into $prefix" >&2
		exit 1
	fi
fi
echo "$modules"
