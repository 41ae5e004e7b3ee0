package benchreport

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const timeV = `	Command being timed: "wget -r -np"
	User time (seconds): 2.22
	System time (seconds): 5.28
	Percent of CPU this job got: 63%
	Elapsed (wall clock) time (h:mm:ss or m:ss): 0:11.73
	Maximum resident set size (kbytes): 10268
	Exit status: 8
`

func TestParseTimeV(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    TimeStats
		wantErr bool
	}{
		{"wget", timeV, TimeStats{Wall: 11730 * time.Millisecond, User: 2220 * time.Millisecond, Sys: 5280 * time.Millisecond, MaxRSSKB: 10268, ExitCode: 8}, false},
		{"hours", "User time (seconds): 1\nSystem time (seconds): 0\nElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03\nMaximum resident set size (kbytes): 5\n",
			TimeStats{Wall: 3723 * time.Second, User: time.Second, MaxRSSKB: 5}, false},
		{"incomplete", "User time (seconds): 1\n", TimeStats{}, true},
		{"bad number", "User time (seconds): x\nSystem time (seconds): 0\nElapsed (wall clock) time (h:mm:ss or m:ss): 0:01\nMaximum resident set size (kbytes): 5\n", TimeStats{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTimeV(strings.NewReader(tt.in))
			if tt.wantErr {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("err = %v, want ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	}
	for _, tt := range tests {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestSummarize(t *testing.T) {
	runs := []Run{
		{Time: TimeStats{Wall: 10 * time.Second, User: 4 * time.Second, Sys: time.Second, MaxRSSKB: 2048}, Requests: 1000, Pages: 800, Kept: 500},
		{Time: TimeStats{Wall: 12 * time.Second, User: 5 * time.Second, Sys: time.Second, MaxRSSKB: 4096}, Requests: 1000, Pages: 750, Kept: 500},
		{Time: TimeStats{Wall: 20 * time.Second, User: 9 * time.Second, Sys: time.Second, MaxRSSKB: 1024}, Requests: 1000, Pages: 900, Kept: 502},
	}
	s, err := Summarize("x", runs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Wall != 12*time.Second || s.Requests != 1000 || s.Kept != 500 || s.MaxRSSMB != 2 {
		t.Errorf("summary %+v", s)
	}
	if s.WallMin != 10*time.Second || s.WallM != 20*time.Second {
		t.Errorf("wall range %v-%v", s.WallMin, s.WallM)
	}
	if math.Abs(s.CPUPer1000-6) > 1e-9 || math.Abs(s.RequestsPerSec-1000.0/12) > 1e-9 {
		t.Errorf("cpu/1000 requests %v, requests/s %v", s.CPUPer1000, s.RequestsPerSec)
	}
	// Per page, each run's own ratio, then the median: CPU 5, 6, 10 s over 800, 750, 900 pages
	// (6.25, 8, 11.1 s per 1,000) in 10, 12, 20 s (80, 62.5, 45 pages/s).
	if s.Pages != 800 || math.Abs(s.CPUPer1000Page-8) > 1e-9 || math.Abs(s.PagesPerSec-62.5) > 1e-9 {
		t.Errorf("pages %d, cpu/1000 pages %v, pages/s %v", s.Pages, s.CPUPer1000Page, s.PagesPerSec)
	}
	if _, err := Summarize("none", nil); !errors.Is(err, ErrFormat) {
		t.Errorf("no runs: err = %v", err)
	}
	table := CompareTable(s, s)
	for _, want := range []string{"| wall time (s) | 12.00 (10.00-20.00)", "| requests sent (nginx logs) | 1000 | 1000 | 1.00 |",
		"| HTML pages fetched | 800 | 800 | 1.00 |", "| CPU s per 1,000 pages fetched (user+sys) | 8.00 | 8.00 | 1.00 |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	const b, e = "<!-- b -->", "<!-- e -->"
	tests := []struct {
		name, doc, body, want string
		wantErr               bool
	}{
		{"replace", "top\n" + b + "\nold\nold2\n" + e + "\nbottom\n", "new", "top\n" + b + "\nnew\n" + e + "\nbottom\n", false},
		{"empty section", b + "\n" + e + "\n", "x\n", b + "\nx\n" + e + "\n", false},
		{"idempotent", b + "\nx\n" + e + "\n", "x\n", b + "\nx\n" + e + "\n", false},
		{"no end", b + "\nold\n", "x", "", true},
		{"no begin", "old\n" + e, "x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplaceSection(tt.doc, b, e, tt.body)
			if tt.wantErr {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("err = %v, want ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

const goBench = `goos: linux
pkg: github.com/horseshoe-crawler/horseshoe/dedup
BenchmarkShingle-2   	   20000	     33000 ns/op	 360.50 MB/s	       0 B/op	       0 allocs/op
BenchmarkSimhashSearch/psm-16/n=1M-2         	   20000	      1500 ns/op	         0.983 recall	    650000 queries/s
BenchmarkSign2000Words
--- some log line
PASS
`

func TestParseGoBench(t *testing.T) {
	bs, err := ParseGoBench(strings.NewReader(goBench))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 {
		t.Fatalf("got %d benchmarks, want 2: %+v", len(bs), bs)
	}
	tests := []struct {
		i          int
		name, unit string
		want       float64
	}{
		{0, "Shingle", "MB/s", 360.5},
		{0, "Shingle", "allocs/op", 0},
		{1, "SimhashSearch/psm-16/n=1M", "recall", 0.983},
		{1, "SimhashSearch/psm-16/n=1M", "queries/s", 650000},
	}
	for _, tt := range tests {
		b := bs[tt.i]
		if b.Name != tt.name || b.Pkg != "github.com/horseshoe-crawler/horseshoe/dedup" {
			t.Errorf("bench %d: name %q pkg %q", tt.i, b.Name, b.Pkg)
		}
		if v, ok := b.Get(tt.unit); !ok || v != tt.want {
			t.Errorf("%s %s = %v, %v; want %v", b.Name, tt.unit, v, ok, tt.want)
		}
	}
	table := BenchTable(bs)
	for _, want := range []string{"| dedup | Shingle | 33.00 µs | 360 MB/s, 0 B/op, 0 allocs/op |", "| 1.50 µs | 0.983 recall, 650000 queries/s |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
