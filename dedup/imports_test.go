package dedup

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureImports: dedup/ is pure (no network, no storage).
func TestPureImports(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	forbidden := map[string]bool{"net": true, "net/http": true, "github.com/dgraph-io/badger/v4": true}
	for _, dep := range strings.Fields(string(out)) {
		if forbidden[dep] || strings.HasPrefix(dep, "github.com/horseshoe-crawler/horseshoe/") && dep != "github.com/horseshoe-crawler/horseshoe/dedup" {
			t.Errorf("dedup depends on %s", dep)
		}
	}
}
