package testtools

import (
	"os"
	"path/filepath"
	"testing"
)

// Readability returns the node_modules directory holding Mozilla's
// Readability and jsdom (from $HORSESHOE_READABILITY or
// scripts/install-readability-deps.sh).
func Readability(tb testing.TB) string {
	tb.Helper()
	Node(tb)
	dir := Installed(tb, "HORSESHOE_READABILITY", "install-readability-deps.sh")
	for _, pkg := range []string{"@mozilla/readability", "jsdom"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "package.json")); err != nil {
			Require(tb, false, pkg+" ("+err.Error()+")", "bash scripts/install-readability-deps.sh (or make test-deps), or set HORSESHOE_READABILITY")
		}
	}
	return dir
}
