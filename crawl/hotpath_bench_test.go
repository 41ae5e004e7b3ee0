package crawl_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// corpusServeEnv makes the test binary a corpus server (TestServeCorpus):
// the benchmark runs the loopback web in a child process, so the CPU it
// counts (getrusage of its own process) is the crawler's alone.
const corpusServeEnv = "HORSESHOE_SERVE_CORPUS"

// TestServeCorpus is the child of BenchmarkCorpusCrawl: with
// $HORSESHOE_SERVE_CORPUS set it serves the shared corpus, prints one line
// "ip base" per host and a line "ready", and serves until its stdin closes.
// Without it, it does nothing.
func TestServeCorpus(t *testing.T) {
	if os.Getenv(corpusServeEnv) == "" {
		t.Skip("the benchmark's corpus server (set by BenchmarkCorpusCrawl)")
	}
	root, _ := testweb.NeedCorpus(t)
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	for _, ip := range web.Hosts() {
		fmt.Printf("%s %s\n", ip, web.BaseURL(ip))
	}
	fmt.Println("ready")
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}

// startCorpusChild starts this test binary as the corpus server and returns
// the manifest's seeds on it and a stop function.
func startCorpusChild(b *testing.B) (seeds []string, stop func()) {
	_, manifest := testweb.NeedCorpus(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestServeCorpus$", "-test.v=false")
	cmd.Env = append(os.Environ(), corpusServeEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() { in.Close(); cmd.Wait() }
	base := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		if ip, u, ok := strings.Cut(sc.Text(), " "); ok {
			base[ip] = u
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	for _, m := range manifest {
		if u, ok := base[m.Host]; ok {
			seeds = append(seeds, u+m.Prefix)
		}
	}
	if len(seeds) == 0 {
		stop()
		b.Fatal("the corpus server named no manifest host")
	}
	return seeds, stop
}

// BenchmarkCorpusCrawl crawls the shared corpus (its manifest's seeds, served
// on loopback by a child process) with the crawler's default configuration
// and no politeness delay, into a fresh store per iteration, and reports the
// crawler process's CPU per request (cpu-us/req) and per stored page record
// (cpu-us/page). Issue 29: run old and new builds alternately and compare
// medians (BENCHMARKS.md, "Issue 29: hot path").
func BenchmarkCorpusCrawl(b *testing.B) {
	seeds, stop := startCorpusChild(b)
	defer stop()
	var cpu time.Duration
	var reqs, pages int64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		db, err := storage.Open(dir, storage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cfg := configs.Default()
		cfg.Politeness.Delay = 0
		cfg.Storage.KeepRaw = false
		c, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := testtools.ProcessCPU()
		if _, err := c.Engine.Seed(seeds); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		if err := c.Engine.Run(ctx, ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		cpu += testtools.ProcessCPU() - before
		b.StopTimer()
		reqs += c.Engine.Requests()
		db.ForEachPage(func(*storage.Page) error { pages++; return nil })
		c.Close()
		db.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(reqs), "cpu-us/req")
	b.ReportMetric(float64(cpu.Microseconds())/float64(pages), "cpu-us/page")
	b.ReportMetric(float64(reqs)/float64(b.N), "req/crawl")
}
