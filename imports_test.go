package horseshoe_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportRules enforces the package boundaries of docs/ARCHITECTURE.md
// (the idea of pebble's TestForbiddenImports): parse/, dedup/ and mirror/ are
// pure; frontier/ and storage/ never import fetch/; only cmd/ wires everything. The one
// project import parse/ may make is internal/whatwgurl, the URL parser it shares with
// frontier/, which is itself pure and imports nothing of the project.
func TestImportRules(t *testing.T) {
	const mod = "github.com/horseshoe-crawler/horseshoe/"
	rules := []struct {
		pkg       string
		forbidden []string // import path prefixes, checked against direct imports
		allowed   []string // exact imports exempt from forbidden
		deps      []string // checked against all transitive dependencies
	}{
		{pkg: "parse", forbidden: []string{"net/http", "os", mod}, allowed: []string{mod + "internal/whatwgurl"}, deps: []string{"github.com/dgraph-io/badger", "github.com/gocolly"}},
		{pkg: "internal/whatwgurl", forbidden: []string{"net/http", "os", mod}, deps: []string{"net/http", "github.com/dgraph-io/badger"}},
		{pkg: "dedup", forbidden: []string{"net/http", "os", mod}, deps: []string{"net/http", "github.com/dgraph-io/badger"}},
		{pkg: "sitemap", forbidden: []string{"net/http", "os", mod}, deps: []string{"net/http", "github.com/dgraph-io/badger"}},
		{pkg: "mirror", forbidden: []string{"net/http", "os", mod}, deps: []string{"net/http", "github.com/dgraph-io/badger"}},
		{pkg: "frontier", forbidden: []string{mod + "fetch", mod + "storage", mod + "crawl", "github.com/dgraph-io/badger"}},
		{pkg: "storage", forbidden: []string{mod + "fetch", mod + "crawl", mod + "parse", mod + "dedup"}},
		{pkg: "fetch", forbidden: []string{mod}},
		{pkg: "report", forbidden: []string{"net/http", mod}},
		{pkg: "configs", forbidden: []string{mod}},
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			direct := goList(t, "{{join .Imports \"\\n\"}}", "./"+r.pkg)
			for _, imp := range direct {
				if slices.Contains(r.allowed, imp) {
					continue
				}
				for _, f := range r.forbidden {
					if imp == f || strings.HasPrefix(imp, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
						t.Errorf("%s imports %s", r.pkg, imp)
					}
				}
			}
			if len(r.deps) == 0 {
				return
			}
			for _, dep := range goList(t, "{{join .Deps \"\\n\"}}", "./"+r.pkg) {
				for _, f := range r.deps {
					if dep == f || strings.HasPrefix(dep, f+"/") || strings.HasPrefix(dep, f) && strings.Contains(f, ".") {
						t.Errorf("%s depends on %s", r.pkg, dep)
					}
				}
			}
		})
	}
}

func goList(t *testing.T, format, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", format, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
