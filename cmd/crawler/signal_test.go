//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// buildSignalCrawler builds the crawler binary once per test.
func buildSignalCrawler(t *testing.T) string {
	t.Helper()
	return buildCrawler(t)
}

// crawledDemo crawls the demo web once with bin and returns the data dir.
func crawledDemo(t *testing.T, bin string) string {
	t.Helper()
	_, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	if code, stderr := runBin(t, bin, append([]string{"crawl", "--data", data, "--delay", "0", "--quiet"}, seeds...)...); code != 0 {
		t.Fatalf("first crawl: exit %d: %s", code, stderr)
	}
	return data
}

// TestInterruptStopsCleanlyAndResumes: the first Ctrl-C lets pages in flight
// finish and exits 0; running crawl again on the same data dir resumes and
// finishes without requesting any URL twice. Two Ctrl-Cs exit at once and
// leave a store that opens cleanly.
func TestInterruptStopsCleanlyAndResumes(t *testing.T) {
	bin := buildSignalCrawler(t)
	w, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	args := append([]string{"crawl", "--data", data, "--delay", "250ms", "--quiet"}, seeds...)

	// waitFor polls cond until it holds; the bound is against a hang only.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s within 60 s", what)
			}
		}
	}

	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	var errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	// Interrupt the crawl once it is under way: its first request has
	// arrived (the crawler watches the signals before it starts crawling).
	waitFor("no request from the crawl", func() bool { return len(w.Requests()) > 0 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted crawl: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("crawl did not stop within 60s of Ctrl-C")
	}
	if !strings.Contains(out.String(), "crawl stopped") {
		t.Fatalf("first run should report a stopped crawl, got %q", out.String())
	}
	firstRun := len(w.Requests())
	if firstRun == 0 {
		t.Fatal("no request before the interrupt")
	}

	// Resume without seeds: they are remembered.
	out.Reset()
	resume := exec.Command(bin, "crawl", "--data", data, "--delay", "0", "--quiet")
	resume.Stdout, resume.Stderr = &out, &errOut
	if err := resume.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "crawl finished") {
		t.Fatalf("resumed crawl did not finish: %q", out.String())
	}
	count := map[string]int{}
	for _, r := range w.Requests() {
		count[r.Host+r.Path]++
		if count[r.Host+r.Path] > 1 {
			t.Errorf("%s%s requested twice across interrupt and resume", r.Host, r.Path)
		}
	}
	if len(w.Requests()) <= firstRun {
		t.Error("the resumed crawl fetched nothing")
	}
	var d report.Data
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", jsonPath}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &d); err != nil || !d.Stats.Complete {
		t.Fatalf("report after resume: complete=%v err=%v", d.Stats.Complete, err)
	}

	// Two interrupts, the second after the first was taken (the crawl may
	// have ended by then: nothing is in flight while it waits 2 s): the
	// crawl exits and its store still opens.
	data2 := filepath.Join(t.TempDir(), "data2")
	before := len(w.Requests())
	cmd2 := exec.Command(bin, append([]string{"crawl", "--data", data2, "--delay", "2s", "--quiet"}, seeds...)...)
	var errOut2 syncBuffer
	cmd2.Stderr = &errOut2
	if err := cmd2.Start(); err != nil {
		t.Fatal(err)
	}
	done2 := make(chan error, 1)
	go func() { done2 <- cmd2.Wait() }()
	defer cmd2.Process.Kill()
	waitFor("no request from the second crawl", func() bool { return len(w.Requests()) > before })
	cmd2.Process.Signal(syscall.SIGINT)
	waitFor("the first Ctrl-C not taken", func() bool { return strings.Contains(errOut2.String(), "interrupted: finishing pages in flight") })
	cmd2.Process.Signal(syscall.SIGINT)
	select {
	case <-done2:
	case <-time.After(60 * time.Second):
		t.Fatal("two Ctrl-Cs did not stop the crawl within 60s")
	}

	if err := run(context.Background(), []string{"report", "--data", data2, "--format", "json", "--out", filepath.Join(t.TempDir(), "r2.json")}, &out, &errOut); err != nil {
		t.Fatalf("store after two interrupts does not open: %v", err)
	}
}

// TestSecondInterruptWithFetchInFlight: the second Ctrl-C (or SIGTERM) stops
// at once even while a request is in flight on a host whose URLs are ready
// again the moment the cancelled request is requeued (a worker used to lease,
// cancel and requeue the same URL forever): a page that drips one byte at a
// time, and a robots.txt that never answers. The first signal leases nothing
// new.
func TestSecondInterruptWithFetchInFlight(t *testing.T) {
	bin := buildSignalCrawler(t)
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.91:0", RobotsAddr: "127.0.0.92:0", DripInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	for _, tc := range []struct {
		name     string
		sig      os.Signal
		seeds    []string
		requests func() int // requests of the kind to interrupt, so far
	}{
		{"page/SIGINT", os.Interrupt, []string{hs.URL + "/slow-drip", hs.URL + "/endless", hs.URL + "/huge-length-hang"},
			func() int { return hs.Handler().Hits("/slow-drip") }},
		{"page/SIGTERM", syscall.SIGTERM, []string{hs.URL + "/slow-drip", hs.URL + "/huge-length-hang"},
			func() int { return hs.Handler().Hits("/slow-drip") }},
		{"robots.txt/SIGINT", os.Interrupt, []string{hs.RobotsURL + "/", hs.RobotsURL + "/a"},
			func() int { return hs.RobotsHits("/robots.txt") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.requests()
			data := filepath.Join(t.TempDir(), "data")
			// A request may take 10 minutes: a crawl that waits for the one
			// in flight after the second signal is far past the bound below.
			cfg := filepath.Join(t.TempDir(), "crawler.yaml")
			if err := os.WriteFile(cfg, []byte("fetch:\n  timeout: 10m\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append([]string{"crawl", "--config", cfg, "--data", data, "--delay", "0", "--quiet", "--workers", "4"}, tc.seeds...)...)
			var errOut syncBuffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(60 * time.Second)
			for tc.requests() == base {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the slow request was never made: %s", errOut.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			// The soft stop is in effect once the crawler says so: nothing
			// is leased after it.
			for deadline := time.Now().Add(60 * time.Second); !strings.Contains(errOut.String(), "interrupted: finishing pages in flight"); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the first signal not taken within 60 s: %s", errOut.String())
				}
			}
			before := len(hs.Handler().Paths())
			cmd.Process.Signal(tc.sig)
			start := time.Now()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the second signal did not stop the crawl within 60 s (its request in flight may take 10 min): %s", errOut.String())
			}
			t.Logf("exited %s after the second signal", time.Since(start).Round(time.Millisecond))
			if !strings.Contains(errOut.String(), "stopping now") {
				t.Errorf("the second signal was not taken as a stop at once: %s", errOut.String())
			}
			if after := len(hs.Handler().Paths()); after != before {
				t.Errorf("paths requested after the first signal: %d -> %d", before, after)
			}
			if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", filepath.Join(t.TempDir(), "r.json")}, io.Discard, io.Discard); err != nil {
				t.Fatalf("store after two signals does not open: %v", err)
			}
		})
	}
}
