//go:build go1.25

package console

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
)

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCrawlUITerminal drives the terminal progress line with a fake crawl
// on synctest's clock: a redraw at the start and every 500ms, the line
// redrawn after each log line, one last redraw and one final newline at
// stop.
func TestCrawlUITerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errOut syncBuffer
		ui := &UI{progress: true, term: true, stderr: &errOut}
		if ui.LogEvery() != 0 {
			t.Error("slog progress lines on a terminal")
		}
		logger := NewLogger(ui, false)
		var mu sync.Mutex
		pages := int64(0)
		snap := func() crawl.Stats {
			mu.Lock()
			defer mu.Unlock()
			pages++
			return crawl.Stats{Pages: pages, Queued: 10, Hosts: 1, Active: 1, Running: true}
		}
		stop := ui.Start(context.Background(), 50, snap)
		time.Sleep(1200 * time.Millisecond) // redraws at 0, 500ms and 1s
		synctest.Wait()
		logger.Warn("something happened", "host", "example.org")
		stop()
		stop()
		logger.Info("after the crawl")
		got := errOut.String()
		// Each draw starts with "\r[": the snapshots taken at 0, 500ms and
		// 1s, the third redrawn after the warning, the fourth at stop.
		var fetched []string
		for _, d := range strings.Split(got, "\r[")[1:] {
			_, rest, _ := strings.Cut(d, "] ")
			n, _, _ := strings.Cut(rest, " fetched")
			fetched = append(fetched, n)
		}
		if want := []string{"1", "2", "3", "3", "4"}; !slices.Equal(fetched, want) {
			t.Errorf("draws show %v pages fetched, want %v:\n%q", fetched, want, got)
		}
		for _, want := range []string{"fetched, 10 queued", "1/1 hosts active", "ETA", "msg=\"something happened\"", "msg=\"after the crawl\""} {
			if !strings.Contains(got, want) {
				t.Errorf("stderr lacks %q:\n%q", want, got)
			}
		}
		// The log line starts on a cleared line and ends with a newline; the
		// progress line is redrawn after it.
		i := strings.Index(got, "time=")
		if i < 1 || got[i-1] != '\r' {
			t.Errorf("log line not written on a cleared line:\n%q", got)
		}
		if !strings.HasSuffix(got, "msg=\"after the crawl\"\n") {
			t.Errorf("output after stop does not end with the plain log line:\n%q", got)
		}
		last := strings.LastIndex(got, "time=")
		if strings.Count(got[:last], "\n") != 2 {
			t.Errorf("want exactly the warning's and the final line's newlines before the last log:\n%q", got)
		}
	})
}

func TestCrawlUINotTerminal(t *testing.T) {
	tests := []struct {
		name    string
		quiet   bool
		wantLog time.Duration
	}{
		{"log lines", false, 5 * time.Second},
		{"quiet", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			ui := NewUI(&errOut, tt.quiet)
			if ui.term {
				t.Fatal("a buffer taken for a terminal")
			}
			if got := ui.LogEvery(); got != tt.wantLog {
				t.Errorf("logEvery %v, want %v", got, tt.wantLog)
			}
			stop := ui.Start(context.Background(), 0, func() crawl.Stats { return crawl.Stats{} })
			NewLogger(ui, tt.quiet).Info("a log line", "n", 1)
			stop()
			if got := errOut.String(); strings.Contains(got, "\r") || strings.Contains(got, "a log line") == tt.quiet {
				t.Errorf("wrote %q without a terminal (quiet %v): want the log line alone, no progress line", got, tt.quiet)
			}
		})
	}
	var nilUI *UI
	if nilUI.LogEvery() != 0 {
		t.Error("nil UI logs progress")
	}
	nilUI.Start(context.Background(), 0, nil)()
}
