package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Module is the Go module path of Horseshoe; frames under it are classified
// by their package.
const Module = "github.com/horseshoe-crawler/horseshoe/"

// Stages in the order the table prints them.
var Stages = []string{"fetch", "parse", "dedup", "mirror", "storage", "frontier", "engine", "runtime/GC", "other"}

// horseshoeStage maps a Horseshoe package to its stage.
var horseshoeStage = map[string]string{
	"fetch": "fetch", "parse": "parse", "dedup": "dedup", "mirror": "mirror",
	"storage": "storage", "frontier": "frontier", "crawl": "engine",
}

// libraryStage maps third-party and standard packages to a stage, for stacks
// that hold no Horseshoe frame (background goroutines of a library).
var libraryStage = []struct{ prefix, stage string }{
	{"github.com/dgraph-io/", "storage"},
	{"github.com/klauspost/compress/", "storage"},
	{"github.com/gocolly/", "fetch"},
	{"net/http.", "fetch"},
	{"net.", "fetch"},
	{"crypto/tls.", "fetch"},
	{"golang.org/x/net/html", "parse"},
	{"github.com/PuerkitoBio/goquery", "parse"},
	{"github.com/andybalholm/cascadia", "parse"},
	{"github.com/nlnwa/whatwg-url/", "frontier"},
}

// Sample is one stack of a CPU profile and the time spent in it.
type Sample struct {
	Value  time.Duration
	Frames []string // leaf first
}

// ParseTraces reads the output of `go tool pprof -traces BINARY PROFILE`.
func ParseTraces(r io.Reader) ([]Sample, error) {
	var out []Sample
	var cur *Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	inTraces := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			inTraces = true
			cur = nil
			continue
		}
		if !inTraces || strings.TrimSpace(line) == "" {
			continue
		}
		if cur == nil {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				return nil, fmt.Errorf("%w: trace header %q", ErrFormat, line)
			}
			d, err := time.ParseDuration(fields[0])
			if err != nil {
				return nil, fmt.Errorf("%w: trace value %q: %w", ErrFormat, fields[0], err)
			}
			out = append(out, Sample{Value: d, Frames: []string{frameName(strings.Join(fields[1:], " "))}})
			cur = &out[len(out)-1]
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "bytes:") {
			continue // a label line
		}
		cur.Frames = append(cur.Frames, frameName(strings.TrimSpace(line)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("benchreport: read traces: %w", err)
	}
	if !inTraces {
		return nil, fmt.Errorf("%w: no traces found", ErrFormat)
	}
	return out, nil
}

// frameName drops pprof's " (inline)" suffix.
func frameName(s string) string {
	return strings.TrimSuffix(s, " (inline)")
}

// StageOf classifies a stack (leaf first): the innermost Horseshoe frame
// names the stage (work a library or the runtime does for it, allocation and
// GC assists included, counts for it); a stack without one is classified by
// the libraries on it, then as runtime/GC if it is the runtime's own.
func StageOf(frames []string) string {
	for _, f := range frames {
		if rest, ok := strings.CutPrefix(f, Module); ok {
			pkg, _, _ := strings.Cut(rest, ".")
			pkg, _, _ = strings.Cut(pkg, "/")
			if s, ok := horseshoeStage[pkg]; ok {
				return s
			}
			return "other"
		}
	}
	for _, f := range frames {
		for _, l := range libraryStage {
			if strings.HasPrefix(f, l.prefix) {
				return l.stage
			}
		}
	}
	for _, f := range frames {
		if !strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "internal/runtime/") &&
			!strings.HasPrefix(f, "runtime/") && f != "[unknown]" && !strings.HasPrefix(f, "gc") &&
			!strings.HasPrefix(f, "aeshash") && !strings.HasPrefix(f, "mem") {
			return "other"
		}
	}
	return "runtime/GC"
}

// StageShare is one row of the stage table.
type StageShare struct {
	Stage string
	Time  time.Duration
	Share float64 // of the total profile time
	Alloc float64 // share of the stage's time spent allocating (runtime.mallocgc and below)
}

// Shares sums samples by stage, in the order of Stages, with the total.
func Shares(samples []Sample) ([]StageShare, time.Duration) {
	by := map[string]time.Duration{}
	alloc := map[string]time.Duration{}
	var total time.Duration
	for _, s := range samples {
		st := StageOf(s.Frames)
		by[st] += s.Value
		total += s.Value
		if slices.Contains(s.Frames, "runtime.mallocgc") {
			alloc[st] += s.Value
		}
	}
	var out []StageShare
	for _, st := range Stages {
		row := StageShare{Stage: st, Time: by[st]}
		if total > 0 {
			row.Share = float64(by[st]) / float64(total)
		}
		if by[st] > 0 {
			row.Alloc = float64(alloc[st]) / float64(by[st])
		}
		out = append(out, row)
	}
	return out, total
}

// StageTable renders the shares as a Markdown table.
func StageTable(rows []StageShare, total time.Duration) string {
	var sb strings.Builder
	sb.WriteString("| stage | CPU s | share | of which allocating |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %.2f | %.1f%% | %.0f%% |\n", r.Stage, r.Time.Seconds(), 100*r.Share, 100*r.Alloc)
	}
	fmt.Fprintf(&sb, "| **total** | %.2f | 100%% | |\n", total.Seconds())
	return sb.String()
}
