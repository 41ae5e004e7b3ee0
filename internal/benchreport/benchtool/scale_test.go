//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/benchreport"
	"github.com/horseshoe-crawler/horseshoe/internal/scaleweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// TestScaleSmoke runs `benchtool scale` as `make bench-scale` does, on 20
// hosts: a real nginx, a real redis-server, the crawler built from this
// tree, each mode at delay 0 and at 100 ms. Every page is fetched exactly
// once in every mode, no host sees two requests closer than the delay
// (across two workers too), and the section of the document is rewritten.
func TestScaleSmoke(t *testing.T) {
	if _, err := scaleweb.NginxBinary(); err != nil {
		testtools.Require(t, false, "nginx ("+err.Error()+")", "apt-get install nginx-light (or make test-deps)")
	}
	for _, tool := range []string{"redis-server", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			testtools.Require(t, false, tool+" ("+err.Error()+")", "apt-get install redis-server util-linux (or make test-deps)")
		}
	}
	dir := t.TempDir()
	crawler := filepath.Join(dir, "crawler")
	if out, err := exec.Command("go", "build", "-o", crawler, "github.com/horseshoe-crawler/horseshoe/cmd/crawler").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	doc := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(doc, []byte("# B\n<!-- bench:scale:begin -->\nold\n<!-- bench:scale:end -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	var out strings.Builder
	args := []string{"scale", "-hosts", "20", "-pages", "6", "-runs", "1", "-delays", "0,100ms",
		"-crawler", crawler, "-dir", run, "-doc", doc, "-timeout", "2m", "-profile", filepath.Join(dir, "prof")}
	if err := runScaleArgs(t, args, &out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(run, "scale.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []benchreport.ScaleRun
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 3 modes x 2 delays", len(runs))
	}
	for _, r := range runs {
		if r.Pages != 120 || r.Repeats != 0 || r.Rate <= 0 || r.WorkerCPU <= 0 {
			t.Errorf("%s at %s: %d pages, %d repeats, %.0f pages/s, worker CPU %s: want 120 pages once each",
				r.Mode, r.Delay, r.Pages, r.Repeats, r.Rate, r.WorkerCPU)
		}
		if r.Delay > 0 && r.MinGap < r.Delay*95/100 {
			t.Errorf("%s at %s: two requests to one host %s apart", r.Mode, r.Delay, r.MinGap)
		}
		if strings.HasPrefix(r.Mode, "redis") && r.RedisCPU <= 0 {
			t.Errorf("%s: no redis-server CPU measured", r.Mode)
		}
	}
	// A CPU profile of every crawler process: 1 + 1 + 2 at each delay.
	if profs, _ := filepath.Glob(filepath.Join(dir, "prof", "*.worker*.pprof")); len(profs) != 8 {
		t.Errorf("CPU profiles: %v, want 8", profs)
	}
	got, _ := os.ReadFile(doc)
	if !strings.Contains(string(got), "| 100ms | redis-2 | 1 |") || strings.Contains(string(got), "old") ||
		!strings.HasSuffix(string(got), "<!-- bench:scale:end -->\nafter\n") {
		t.Errorf("document:\n%s", got)
	}
}

func runScaleArgs(t *testing.T, args []string, out *strings.Builder) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return run(ctx, args, out)
}
