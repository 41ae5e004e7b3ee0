//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The crawler binaries the end-to-end tests run, built once per test binary
// run (per set of build tags) into one temporary directory that TestMain
// removes at the end.
var bins struct {
	mu    sync.Mutex
	dir   string
	built map[string]*builtBin
}

type builtBin struct {
	once sync.Once
	path string
	err  string
}

// buildCrawler returns the crawler binary built from this package with the
// given build tags (none: the crawler as shipped). The first call for a set
// of tags runs go build; later calls, from any test, reuse its binary.
func buildCrawler(tb testing.TB, tags ...string) string {
	tb.Helper()
	key := strings.Join(tags, ",")
	bins.mu.Lock()
	if bins.built == nil {
		bins.built = map[string]*builtBin{}
	}
	b := bins.built[key]
	if b == nil {
		b = &builtBin{}
		bins.built[key] = b
	}
	if bins.dir == "" {
		dir, err := os.MkdirTemp("", "horseshoe-crawler-bin-")
		if err != nil {
			bins.mu.Unlock()
			tb.Fatal(err)
		}
		bins.dir = dir
	}
	dir := bins.dir
	bins.mu.Unlock()
	b.once.Do(func() {
		name := "crawler"
		if key != "" {
			name += "-" + strings.ReplaceAll(key, ",", "-")
		}
		path := filepath.Join(dir, name)
		args := []string{"build", "-o", path}
		if key != "" {
			args = append(args, "-tags", key)
		}
		if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
			b.err = "go build: " + err.Error() + "\n" + string(out)
			return
		}
		b.path = path
	})
	if b.err != "" {
		tb.Fatal(b.err)
	}
	return b.path
}

// removeBins removes the binaries buildCrawler built (from TestMain).
func removeBins() {
	bins.mu.Lock()
	defer bins.mu.Unlock()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
}
