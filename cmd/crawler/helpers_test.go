package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// Helpers of both tiers' tests (the fast tests and those behind the e2e
// build tag) live in files without the tag.

// pagesByURL indexes a report's pages by URL.
func pagesByURL(d *report.Data) map[string]report.Page {
	m := make(map[string]report.Page, len(d.Pages))
	for _, p := range d.Pages {
		m[p.URL] = p
	}
	return m
}

func demoSeeds(t *testing.T, w *loopweb.Web) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", "SEEDS.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			seeds = append(seeds, w.URL(f[0], f[1]))
		}
	}
	return seeds
}

// startDemo serves the demo web on loopback for the test and returns it with
// its seeds.
func startDemo(t *testing.T) (*loopweb.Web, []string) {
	t.Helper()
	w, err := loopweb.Start(filepath.Join("..", "..", "testdata", "demo"), loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, demoSeeds(t, w)
}
