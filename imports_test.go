package horseshoe_test

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const mod = "github.com/horseshoe-crawler/horseshoe/"

// fixtures are the packages only tests, benchmarks and make targets link.
var fixtures = []string{"storage/storetest", "internal/testweb", "internal/testtools", "internal/testproxy",
	"internal/hostile", "internal/variantweb", "internal/dedupeval", "internal/warcread", "internal/memnet",
	"internal/scaleweb", "internal/zipfweb", "internal/testsummary", "internal/benchreport", "internal/bigstore",
	"internal/storefill", "internal/crosscheck"}

// TestBinaryLinksNoFixture: the crawler binary links no test fixture, and
// not the testing package (a fixture's usual way in).
func TestBinaryLinksNoFixture(t *testing.T) {
	for _, dep := range packages(t)[mod+"cmd/crawler"].deps {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") {
			t.Errorf("the binary links %s", dep)
		}
		for _, f := range fixtures {
			if dep == mod+f || strings.HasPrefix(dep, mod+f+"/") {
				t.Errorf("the binary links the test fixture %s", dep)
			}
		}
	}
}

// TestImportRules enforces the package boundaries of docs/ARCHITECTURE.md
// (the idea of pebble's TestForbiddenImports): parse/, dedup/ and mirror/ are
// pure; frontier/ and storage/ never import fetch/; only cmd/ wires everything. The one
// project import parse/ may make is internal/whatwgurl, the URL parser it shares with
// frontier/, which is itself pure and imports nothing of the project. Every
// package has a rule (a new one fails until it is given one).
func TestImportRules(t *testing.T) {
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
		{pkg: "frontier", forbidden: []string{mod}, allowed: []string{mod + "internal/whatwgurl"}, deps: []string{"github.com/dgraph-io/badger"}},
		{pkg: "storage", forbidden: []string{mod}, allowed: []string{mod + "frontier"}},
		{pkg: "fetch", forbidden: []string{mod}},
		{pkg: "report", forbidden: []string{"net/http", mod}},
		{pkg: "configs", forbidden: []string{mod}},
		// The crawl's engine: the layers above it (the composition root,
		// the backends, the exports, the views) are not its to import.
		{pkg: "crawl", forbidden: []string{mod + "cmd", mod + "session", mod + "cluster", mod + "export", mod + "internal/", mod + "storage/storetest"}},
		{pkg: "export", forbidden: []string{mod + "cmd", mod + "session", mod + "cluster", mod + "crawl", mod + "internal/"}, allowed: []string{mod + "internal/whatwgurl"}},
		{pkg: "cluster/redisstate", forbidden: []string{mod + "cmd", mod + "session", mod + "export", mod + "internal/", mod + "report"}},
		{pkg: "session", forbidden: []string{mod + "cmd", mod + "internal/"}, allowed: []string{mod + "internal/live"}},
		{pkg: "internal/live", forbidden: []string{mod + "cmd", mod + "session", mod + "cluster", mod + "export", mod + "internal/"}},
		{pkg: "internal/console", forbidden: []string{mod + "cmd", mod + "session", mod + "cluster", mod + "export", mod + "internal/"}},
		// The demo's web: the binary links it, so it holds nothing of a test.
		{pkg: "internal/loopweb", forbidden: []string{mod, "testing"}},
		{pkg: "cmd/crawler", forbidden: []string{mod + "storage/storetest"}},
		// Test fixtures and tools: tests, benchmarks and make targets link
		// them; the binary never does (TestBinaryLinksNoFixture).
		{pkg: "storage/storetest", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/testweb", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/testtools", forbidden: []string{mod}},
		{pkg: "internal/testtools/redistest", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/testproxy", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/hostile", forbidden: []string{mod}},
		{pkg: "internal/variantweb", forbidden: []string{mod + "cmd", mod + "session", mod + "crawl"}},
		{pkg: "internal/dedupeval", forbidden: []string{mod + "cmd", mod + "session", mod + "crawl"}},
		{pkg: "internal/warcread", forbidden: []string{mod}},
		{pkg: "internal/memnet", forbidden: []string{mod}},
		{pkg: "internal/scaleweb", forbidden: []string{mod}},
		{pkg: "internal/zipfweb", forbidden: []string{mod + "cmd", mod + "session", mod + "crawl"}},
		{pkg: "internal/zipfweb/cmd/zipfweb", forbidden: []string{mod + "cmd", mod + "session", mod + "crawl"}},
		{pkg: "internal/testsummary", forbidden: []string{mod}},
		{pkg: "internal/crosscheck", forbidden: []string{mod}},
		{pkg: "internal/benchreport", forbidden: []string{mod}},
		{pkg: "internal/benchreport/benchtool", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/bigstore", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/bigstore/resumebench", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "internal/storefill", forbidden: []string{mod + "cmd", mod + "session", mod + "crawl", mod + "export"}},
		{pkg: "internal/storefill/fillstore", forbidden: []string{mod + "cmd", mod + "session"}},
		{pkg: "", forbidden: []string{mod}},
	}
	pkgs := packages(t)
	ruled := map[string]bool{}
	for _, r := range rules {
		ruled[strings.TrimSuffix(mod+r.pkg, "/")] = true
	}
	for p := range pkgs {
		if !ruled[p] {
			t.Errorf("package %s has no import rule: add one", p)
		}
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			info, ok := pkgs[strings.TrimSuffix(mod+r.pkg, "/")]
			if !ok {
				t.Fatalf("no package %q: remove its rule", r.pkg)
			}
			for _, imp := range info.imports {
				if slices.Contains(r.allowed, imp) {
					continue
				}
				for _, f := range r.forbidden {
					if imp == f || strings.HasPrefix(imp, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
						t.Errorf("%s imports %s", r.pkg, imp)
					}
				}
			}
			for _, dep := range info.deps {
				for _, f := range r.deps {
					if dep == f || strings.HasPrefix(dep, f+"/") || strings.HasPrefix(dep, f) && strings.Contains(f, ".") {
						t.Errorf("%s depends on %s", r.pkg, dep)
					}
				}
			}
		})
	}
}

// pkgInfo is what `go list` says of one package of the module.
type pkgInfo struct{ imports, deps []string }

var (
	listOnce sync.Once
	listed   map[string]pkgInfo // by import path
	listErr  error
)

// packages lists every package of the module once (one `go list` for all
// the tests of this package).
func packages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	listOnce.Do(func() {
		out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...").Output()
		if err != nil {
			listErr = err
			return
		}
		listed = map[string]pkgInfo{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Split(l, "|")
			listed[f[0]] = pkgInfo{imports: strings.Fields(f[1]), deps: strings.Fields(f[2])}
		}
	})
	if listErr != nil {
		t.Fatalf("go list ./...: %v", listErr)
	}
	return listed
}
