package console_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/console"
)

// fakeClock is a manual clock for Progress.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// lastLine returns what a terminal shows after out: the text after the last
// carriage return, without trailing padding.
func lastLine(out string) string {
	if i := strings.LastIndexByte(out, '\r'); i >= 0 {
		out = out[i+1:]
	}
	return strings.TrimRight(out, " ")
}

func TestProgressLine(t *testing.T) {
	type step struct {
		advance time.Duration
		stats   crawl.Stats
		want    string
	}
	tests := []struct {
		name     string
		maxPages int
		steps    []step
	}{
		{
			name: "no budget",
			steps: []step{
				{0, crawl.Stats{}, "[0s] 0 fetched, 0 queued, 0.0/s, 0.0% dup, 0/0 hosts active"},
				{2 * time.Second, crawl.Stats{Pages: 40, Duplicates: 10, Queued: 1234, Active: 3, Hosts: 12},
					"[2s] 40 fetched, 1,234 queued, 20.0/s, 25.0% dup, 3/12 hosts active"},
				{2 * time.Second, crawl.Stats{Pages: 50, Duplicates: 10, Queued: 1200, Active: 2, Hosts: 12},
					"[4s] 50 fetched, 1,200 queued, 12.5/s, 20.0% dup, 2/12 hosts active"},
			},
		},
		{
			name:     "budget: ETA from the rate",
			maxPages: 1000,
			steps: []step{
				{0, crawl.Stats{}, "[0s] 0 fetched, 0 queued, 0.0/s, 0.0% dup, 0/0 hosts active, ETA ?"},
				{10 * time.Second, crawl.Stats{Pages: 100, Queued: 5},
					"[10s] 100 fetched, 5 queued, 10.0/s, 0.0% dup, 0/0 hosts active, ETA 1m30s"},
				{80 * time.Second, crawl.Stats{Pages: 1000},
					"[1m30s] 1,000 fetched, 0 queued, 11.2/s, 0.0% dup, 0/0 hosts active, budget spent"},
			},
		},
		{
			name:     "rate over the last window only",
			maxPages: 100000,
			steps: []step{
				{5 * time.Second, crawl.Stats{Pages: 5000}, "1,000.0/s"},
				{5 * time.Second, crawl.Stats{Pages: 10000}, "1,000.0/s"},
				// The crawl stalls: after a window without pages the
				// rate is 0, not the run's average.
				{5 * time.Second, crawl.Stats{Pages: 10000}, "500.0/s"},
				{6 * time.Second, crawl.Stats{Pages: 10000}, ", 0.0/s, "},
				{3600 * time.Second, crawl.Stats{Pages: 10000}, "[1h00m]"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			var cur crawl.Stats
			var out bytes.Buffer
			p := console.NewProgress(&out, func() crawl.Stats { return cur }, console.ProgressOptions{
				MaxPages: tt.maxPages, Window: 10 * time.Second, Now: clock.Now})
			for i, s := range tt.steps {
				clock.Add(s.advance)
				cur = s.stats
				p.Update()
				line := lastLine(out.String())
				if !strings.Contains(line, s.want) {
					t.Errorf("step %d: line %q, want %q in it", i, line, s.want)
				}
				if len(line) > 100 {
					t.Errorf("step %d: line of %d columns", i, len(line))
				}
				if strings.ContainsAny(out.String(), "\x1b\n") {
					t.Errorf("step %d: escape sequence or newline in %q", i, out.String())
				}
			}
		})
	}
}

func TestProgressRateFormatting(t *testing.T) {
	// Rates above 999 get thousands separators like the counts.
	clock := &fakeClock{now: time.Unix(0, 0)}
	var out bytes.Buffer
	s := crawl.Stats{}
	p := console.NewProgress(&out, func() crawl.Stats { return s }, console.ProgressOptions{Now: clock.Now})
	clock.Add(time.Second)
	s.Pages = 123456
	p.Update()
	if got := lastLine(out.String()); !strings.Contains(got, "123,456 fetched") || !strings.Contains(got, "123,456.0/s") {
		t.Errorf("line %q", got)
	}
}

func TestProgressPadsShorterLine(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	var out bytes.Buffer
	s := crawl.Stats{Pages: 1000000, Queued: 1000000}
	p := console.NewProgress(&out, func() crawl.Stats { return s }, console.ProgressOptions{Now: clock.Now})
	p.Update()
	first := out.String()
	out.Reset()
	s = crawl.Stats{}
	p.Update()
	second := out.String()
	if !strings.HasPrefix(second, "\r") {
		t.Fatalf("redraw %q does not start with a carriage return", second)
	}
	if len(second) != len(first) {
		t.Errorf("redraw of a shorter line is %d bytes, want %d (padded over the old one)", len(second), len(first))
	}
}

func TestProgressWriterKeepsLogsAndLineApart(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{now: time.Unix(0, 0)}
	p := console.NewProgress(&out, func() crawl.Stats { return crawl.Stats{Pages: 7} }, console.ProgressOptions{Now: clock.Now})
	w := p.Writer()

	// Before the first draw, log output passes through untouched.
	if _, err := w.Write([]byte("level=INFO msg=start\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "level=INFO msg=start\n" {
		t.Fatalf("before the line: %q", got)
	}
	p.Update()
	line := lastLine(out.String())
	out.Reset()
	if _, err := w.Write([]byte("level=WARN msg=slow\n")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := "\r" + strings.Repeat(" ", len(line)) + "\r" + "level=WARN msg=slow\n" + "\r" + line
	if got != want {
		t.Errorf("log write:\n got %q\nwant %q", got, want)
	}

	out.Reset()
	p.Finish()
	if got := out.String(); !strings.HasSuffix(got, "\n") || !strings.Contains(got, "7 fetched") {
		t.Errorf("Finish wrote %q, want the last line and a newline", got)
	}
	out.Reset()
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "after\n" {
		t.Errorf("after Finish: %q, want the log line alone", got)
	}
}

func TestProgressRunStopsWithContext(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
	var calls sync.WaitGroup
	calls.Add(3)
	n := 0
	snap := func() crawl.Stats {
		n++
		if n <= 3 {
			calls.Done()
		}
		return crawl.Stats{Pages: int64(n)}
	}
	p := console.NewProgress(w, snap, console.ProgressOptions{Every: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	calls.Wait()
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	mu.Lock()
	defer mu.Unlock()
	if got := out.String(); !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("output %q: want redraws and one final newline", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name string
		w    any
		want bool
	}{
		{"buffer", &bytes.Buffer{}, false},
		{"regular file", f, false},
		{"nil file", (*os.File)(nil), false},
	}
	if dn, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		defer dn.Close()
		tests = append(tests, struct {
			name string
			w    any
			want bool
		}{"character device", dn, true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := tt.w.(interface{ Write([]byte) (int, error) })
			if got := console.IsTerminal(w); got != tt.want {
				t.Errorf("IsTerminal = %v, want %v", got, tt.want)
			}
		})
	}
}

// BenchmarkProgressUpdate measures one redraw of the progress line.
func BenchmarkProgressUpdate(b *testing.B) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	s := crawl.Stats{Pages: 12345, Duplicates: 2345, Queued: 67890, Active: 8, Hosts: 40}
	p := console.NewProgress(io.Discard, func() crawl.Stats { return s }, console.ProgressOptions{MaxPages: 100000, Now: clock.Now})
	b.ReportAllocs()
	for range b.N {
		clock.Add(100 * time.Millisecond)
		s.Pages++
		p.Update()
	}
}
