package testtools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteTree creates files under root; a value starting with "->" makes a
// symbolic link to the rest, a name ending in "/" an empty directory.
func WriteTree(tb testing.TB, root string, tree map[string]string) {
	tb.Helper()
	for name, content := range tree {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}
