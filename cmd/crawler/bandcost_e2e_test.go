//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/internal/variantweb"
)

// BenchmarkCrawlBands is issue 32's CPU side by side on a crawl: the crawler
// binary (buildCrawler, a process of its own, so that its CPU is the crawl's
// alone and not the loopback servers') crawls a web with `dedup.bands: -1`
// ("filter", the seeds' filter alone) or at the default ("bands", the
// candidate stage on), 8 workers, no delay. cpu-us/request is the crawler
// process's user + system CPU over the requests the web logged. Webs:
// "corpus" (the real corpus from internal/testweb, the 15 prefixes of its
// manifest as seeds, links to its hosts rewritten to the servers' ports) and
// "bandweb" (the band web of TestBandWebRecall, seed 1: 2,684 pages, three in
// four a near copy at J in [0.80, 1], where the stage settles most; "corpus"
// runs only with HORSESHOE_BENCH_CORPUS=1). Run the
// arms alternating, one process each, and take medians (BENCHMARKS.md,
// "Issue 32: the candidate stage's cost").
func BenchmarkCrawlBands(b *testing.B) {
	bin := buildCrawler(b)
	webs := []struct {
		name  string
		start func(b *testing.B) (*loopweb.Web, []string)
	}{
		{"corpus", func(b *testing.B) (*loopweb.Web, []string) {
			if os.Getenv("HORSESHOE_BENCH_CORPUS") == "" {
				// Not in make bench-smoke: two corpus crawls of 30-60 s.
				b.Skip("crawls the whole corpus: set HORSESHOE_BENCH_CORPUS=1 (scripts/bandcost.sh does)")
			}
			root, manifest := testweb.NeedCorpus(b)
			w, err := loopweb.Start(root, loopweb.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var seeds []string
			for _, m := range manifest {
				seeds = append(seeds, w.URL(m.Host, m.Prefix))
			}
			return w, seeds
		}},
		{"bandweb", func(b *testing.B) (*loopweb.Web, []string) {
			bw, err := variantweb.GenerateBand(1, variantweb.BandOptions{Sources: 667, Copies: 3})
			if err != nil {
				b.Fatal(err)
			}
			dir := filepath.Join(b.TempDir(), "web")
			if err := bw.Write(dir); err != nil {
				b.Fatal(err)
			}
			w, err := loopweb.Start(dir, loopweb.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var seeds []string
			for _, s := range bw.Seeds() {
				seeds = append(seeds, w.URL(s[0], s[1]))
			}
			return w, seeds
		}},
	}
	for _, web := range webs {
		for _, arm := range []struct{ name, config string }{{"filter", "dedup:\n  bands: -1\n"}, {"bands", ""}} {
			b.Run(web.name+"/"+arm.name, func(b *testing.B) {
				w, seeds := web.start(b)
				defer w.Close()
				dir := b.TempDir()
				cfg := filepath.Join(dir, "config.yaml")
				if err := os.WriteFile(cfg, []byte(arm.config), 0o644); err != nil {
					b.Fatal(err)
				}
				var cpu float64
				requests := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					data := filepath.Join(b.TempDir(), "data") // a fresh data dir per crawl
					from := len(w.Requests())
					args := append([]string{"crawl", "--config", cfg, "--data", data, "--delay", "0", "--workers", "8", "--quiet"}, seeds...)
					cmd := exec.Command(bin, args...)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("crawl: %v\n%s", err, out)
					}
					cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
					requests += len(w.Requests()) - from
				}
				b.ReportMetric(cpu*1e6/float64(requests), "cpu-us/request")
				b.ReportMetric(float64(requests)/float64(b.N), "requests/crawl")
			})
		}
	}
}
