// Package benchreport turns the raw outputs of `make bench` (GNU time -v
// reports, nginx request counts, `go tool pprof -traces` dumps and `go test
// -bench` lines) into the tables of BENCHMARKS.md, and rewrites the figures
// section of that file in place.
//
// It is pure: callers read the files and pass readers or strings in.
package benchreport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrFormat is returned (wrapped) when an input is not in the expected format.
var ErrFormat = errors.New("benchreport: unexpected input format")

// TimeStats is what GNU time -v reports about one process.
type TimeStats struct {
	Wall      time.Duration
	User, Sys time.Duration
	MaxRSSKB  int64
	ExitCode  int
}

// CPU is user plus system time.
func (t TimeStats) CPU() time.Duration { return t.User + t.Sys }

// ParseTimeV parses the report of `/usr/bin/time -v`.
func ParseTimeV(r io.Reader) (TimeStats, error) {
	var t TimeStats
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		var err error
		switch {
		case key == "User time (seconds)":
			t.User, err = seconds(val)
			seen++
		case key == "System time (seconds)":
			t.Sys, err = seconds(val)
			seen++
		case strings.HasPrefix(key, "Elapsed (wall clock) time"):
			t.Wall, err = clock(val)
			seen++
		case key == "Maximum resident set size (kbytes)":
			t.MaxRSSKB, err = strconv.ParseInt(val, 10, 64)
			seen++
		case key == "Exit status":
			t.ExitCode, err = strconv.Atoi(val)
		}
		if err != nil {
			return t, fmt.Errorf("%w: time -v %q: %w", ErrFormat, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("benchreport: read time -v: %w", err)
	}
	if seen < 4 {
		return t, fmt.Errorf("%w: time -v report lacks wall, user, sys or max RSS", ErrFormat)
	}
	return t, nil
}

func seconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(f * float64(time.Second)), nil
}

// clock parses h:mm:ss or m:ss.ss.
func clock(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("bad clock %q", s)
	}
	var total float64
	for _, p := range parts {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return 0, err
		}
		total = total*60 + f
	}
	return time.Duration(total * float64(time.Second)), nil
}

// Run is one end-to-end crawl of the corpus by one tool.
type Run struct {
	Time     TimeStats
	Requests int // requests the servers logged
	Pages    int // HTML pages fetched (with content: unique and duplicates for Horseshoe, saved for wget)
	Kept     int // HTML pages kept (unique for Horseshoe, saved for wget)
}

// Summary is the median of several runs of one tool.
type Summary struct {
	Tool           string
	Runs           int
	Wall           time.Duration
	Requests       int
	Pages          int
	Kept           int
	RequestsPerSec float64 // requests per second of wall time
	CPUPer1000     float64 // CPU seconds (user+sys) per 1,000 requests
	PagesPerSec    float64 // HTML pages fetched per second of wall time
	CPUPer1000Page float64 // CPU seconds (user+sys) per 1,000 HTML pages fetched
	MaxRSSMB       float64
	WallMin, WallM time.Duration // min and max wall time over the runs
}

// Summarize returns the medians of runs (each figure's own median).
func Summarize(tool string, runs []Run) (Summary, error) {
	if len(runs) == 0 {
		return Summary{}, fmt.Errorf("%w: no runs of %s", ErrFormat, tool)
	}
	s := Summary{Tool: tool, Runs: len(runs)}
	var walls, reqs, pages, kept, rps, cpu, pps, cpuPage, rss []float64
	for _, r := range runs {
		w := r.Time.Wall.Seconds()
		walls = append(walls, w)
		reqs = append(reqs, float64(r.Requests))
		pages = append(pages, float64(r.Pages))
		kept = append(kept, float64(r.Kept))
		if w > 0 {
			rps = append(rps, float64(r.Requests)/w)
			pps = append(pps, float64(r.Pages)/w)
		}
		if r.Requests > 0 {
			cpu = append(cpu, r.Time.CPU().Seconds()*1000/float64(r.Requests))
		}
		if r.Pages > 0 {
			cpuPage = append(cpuPage, r.Time.CPU().Seconds()*1000/float64(r.Pages))
		}
		rss = append(rss, float64(r.Time.MaxRSSKB)/1024)
	}
	s.Wall = time.Duration(Median(walls) * float64(time.Second))
	s.Requests = int(math.Round(Median(reqs)))
	s.Pages = int(math.Round(Median(pages)))
	s.Kept = int(math.Round(Median(kept)))
	s.RequestsPerSec = Median(rps)
	s.CPUPer1000 = Median(cpu)
	s.PagesPerSec = Median(pps)
	s.CPUPer1000Page = Median(cpuPage)
	s.MaxRSSMB = Median(rss)
	s.WallMin = time.Duration(slices.Min(walls) * float64(time.Second))
	s.WallM = time.Duration(slices.Max(walls) * float64(time.Second))
	return s, nil
}

// Median of xs (the mean of the middle two for an even count); NaN if empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CompareTable renders the end-to-end table: one column per tool and the
// ratio of the first to the second.
func CompareTable(a, b Summary) string {
	var sb strings.Builder
	ratio := func(x, y float64) string {
		if y == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", x/y)
	}
	fmt.Fprintf(&sb, "| median of %d runs | %s | %s | ratio %s/%s |\n|---|---|---|---|\n", a.Runs, a.Tool, b.Tool, a.Tool, b.Tool)
	fmt.Fprintf(&sb, "| wall time (s) | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %s |\n",
		a.Wall.Seconds(), a.WallMin.Seconds(), a.WallM.Seconds(), b.Wall.Seconds(), b.WallMin.Seconds(), b.WallM.Seconds(),
		ratio(a.Wall.Seconds(), b.Wall.Seconds()))
	fmt.Fprintf(&sb, "| requests sent (nginx logs) | %d | %d | %s |\n", a.Requests, b.Requests, ratio(float64(a.Requests), float64(b.Requests)))
	fmt.Fprintf(&sb, "| HTML pages fetched | %d | %d | %s |\n", a.Pages, b.Pages, ratio(float64(a.Pages), float64(b.Pages)))
	fmt.Fprintf(&sb, "| HTML pages kept | %d | %d | %s |\n", a.Kept, b.Kept, ratio(float64(a.Kept), float64(b.Kept)))
	fmt.Fprintf(&sb, "| pages fetched/s | %.0f | %.0f | %s |\n", a.PagesPerSec, b.PagesPerSec, ratio(a.PagesPerSec, b.PagesPerSec))
	fmt.Fprintf(&sb, "| requests/s | %.0f | %.0f | %s |\n", a.RequestsPerSec, b.RequestsPerSec, ratio(a.RequestsPerSec, b.RequestsPerSec))
	fmt.Fprintf(&sb, "| CPU s per 1,000 pages fetched (user+sys) | %.2f | %.2f | %s |\n", a.CPUPer1000Page, b.CPUPer1000Page, ratio(a.CPUPer1000Page, b.CPUPer1000Page))
	fmt.Fprintf(&sb, "| CPU s per 1,000 requests (user+sys) | %.2f | %.2f | %s |\n", a.CPUPer1000, b.CPUPer1000, ratio(a.CPUPer1000, b.CPUPer1000))
	fmt.Fprintf(&sb, "| peak RSS (MB) | %.0f | %.1f | %s |\n", a.MaxRSSMB, b.MaxRSSMB, ratio(a.MaxRSSMB, b.MaxRSSMB))
	return sb.String()
}

// ReplaceSection replaces the text between the line holding begin and the
// line holding end (markers kept) with body. Both markers must be present, in
// that order.
func ReplaceSection(doc, begin, end, body string) (string, error) {
	i := strings.Index(doc, begin)
	if i < 0 {
		return "", fmt.Errorf("%w: marker %q not found", ErrFormat, begin)
	}
	startBody := i + len(begin)
	if nl := strings.IndexByte(doc[startBody:], '\n'); nl >= 0 {
		startBody += nl + 1
	} else {
		return "", fmt.Errorf("%w: nothing after marker %q", ErrFormat, begin)
	}
	j := strings.Index(doc[startBody:], end)
	if j < 0 {
		return "", fmt.Errorf("%w: marker %q not found after %q", ErrFormat, end, begin)
	}
	endBody := startBody + j
	// Keep the end marker at the start of its line.
	if k := strings.LastIndexByte(doc[startBody:endBody], '\n'); k >= 0 {
		endBody = startBody + k + 1
	} else {
		endBody = startBody
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return doc[:startBody] + body + doc[endBody:], nil
}
