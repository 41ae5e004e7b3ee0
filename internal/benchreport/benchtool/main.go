// Command benchtool is the Go half of scripts/bench.sh (`make bench`).
//
//	benchtool corpus                      print the unpacked corpus root (internal/testweb.Corpus)
//	benchtool seeds [-port N]             print the corpus seeds, one URL per line, from its MANIFEST
//	benchtool kept -report FILE           print the unique page count of a `crawler report --format json`
//	benchtool fetched -report FILE        print its count of HTML pages fetched (unique and duplicates)
//	benchtool stages -traces FILE         print the CPU profile's share by stage (from pprof -traces)
//	benchtool render -dir RUN -doc FILE   print the tables and rewrite the figures section of FILE
//	benchtool scale [-hosts N ...]        the scale-out bench on a generated web of N hosts (scale.go)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/benchreport"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: benchtool corpus|seeds|kept|stages|render|scale [args]")
	}
	if args[0] == "scale" {
		return runScale(ctx, args[1:], stdout)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	port := fs.Int("port", 80, "port the corpus is served on (seeds)")
	reportFile := fs.String("report", "", "crawler report JSON (kept)")
	traces := fs.String("traces", "", "output of go tool pprof -traces (stages)")
	dir := fs.String("dir", "", "run directory written by scripts/bench.sh (render)")
	doc := fs.String("doc", "", "BENCHMARKS.md to rewrite (render; empty: print only)")
	goVersion := fs.String("go-version", runtime.Version(), "go version line (render)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "corpus":
		root, _, err := testweb.Corpus()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, root)
	case "seeds":
		_, manifest, err := testweb.Corpus()
		if err != nil {
			return err
		}
		for _, m := range manifest {
			host := m.Host
			if *port != 80 {
				host += ":" + strconv.Itoa(*port)
			}
			fmt.Fprintf(stdout, "http://%s%s\n", host, m.Prefix)
		}
	case "kept":
		n, err := pageCount(*reportFile, "unique")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, n)
	case "fetched":
		n, err := pageCount(*reportFile, "unique", "exact_duplicate", "near_duplicate")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, n)
	case "stages":
		rows, total, err := stages(*traces)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, benchreport.StageTable(rows, total))
	case "render":
		return render(*dir, *doc, *goVersion, stdout)
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}

// pageCount is the number of pages of the given classes in a report (`crawler
// report --format json`); the unique class must be present.
func pageCount(name string, classes ...string) (int, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, fmt.Errorf("read report: %w", err)
	}
	var r struct {
		Stats struct {
			ByClass map[string]int `json:"by_class"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("decode report %s: %w", name, err)
	}
	if _, ok := r.Stats.ByClass["unique"]; !ok {
		return 0, fmt.Errorf("report %s has no unique class count", name)
	}
	n := 0
	for _, c := range classes {
		n += r.Stats.ByClass[c]
	}
	return n, nil
}

func stages(name string) ([]benchreport.StageShare, time.Duration, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("open traces: %w", err)
	}
	defer f.Close()
	samples, err := benchreport.ParseTraces(f)
	if err != nil {
		return nil, 0, err
	}
	rows, total := benchreport.Shares(samples)
	return rows, total, nil
}

// loadRuns reads RUN/e2e/TOOL-K.{time,requests,pages,kept} for K = 1, 2, ...
func loadRuns(dir, tool string) ([]benchreport.Run, error) {
	var runs []benchreport.Run
	for k := 1; ; k++ {
		base := filepath.Join(dir, "e2e", fmt.Sprintf("%s-%d", tool, k))
		f, err := os.Open(base + ".time")
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, err
		}
		t, err := benchreport.ParseTimeV(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s.time: %w", base, err)
		}
		req, err := readInt(base + ".requests")
		if err != nil {
			return nil, err
		}
		kept, err := readInt(base + ".kept")
		if err != nil {
			return nil, err
		}
		pages, err := readInt(base + ".pages")
		if err != nil {
			return nil, err
		}
		runs = append(runs, benchreport.Run{Time: t, Requests: req, Pages: pages, Kept: kept})
	}
	return runs, nil
}

func readInt(name string) (int, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func readBench(name string) ([]benchreport.Bench, error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return benchreport.ParseGoBench(f)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func render(dir, doc, goVersion string, stdout io.Writer) error {
	if dir == "" {
		return errors.New("render: -dir is required")
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "Measured %s on %d CPUs (%s), %s, %s/%s.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), cpuModel(), goVersion, runtime.GOOS, runtime.GOARCH)
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err == nil {
		out.Write(b)
	}
	hs, err := loadRuns(dir, "horseshoe")
	if err != nil {
		return err
	}
	wg, err := loadRuns(dir, "wget")
	if err != nil {
		return err
	}
	if len(hs) > 0 && len(wg) > 0 {
		a, err := benchreport.Summarize("Horseshoe", hs)
		if err != nil {
			return err
		}
		b, err := benchreport.Summarize("wget", wg)
		if err != nil {
			return err
		}
		out.WriteString("\n### 1. End to end: the real corpus from nginx on loopback\n\n")
		out.WriteString(benchreport.CompareTable(a, b))
		goal := "met"
		if a.Wall > b.Wall || a.Requests >= b.Requests {
			goal = "**not met**"
		}
		fmt.Fprintf(&out, "\nGoal (wall time <= wget's with fewer requests): %s.\n", goal)
	}
	if _, err := os.Stat(filepath.Join(dir, "traces.txt")); err == nil {
		rows, total, err := stages(filepath.Join(dir, "traces.txt"))
		if err != nil {
			return err
		}
		out.WriteString("\n### 2. Where the CPU goes (profile of one Horseshoe crawl, by stage)\n\n")
		out.WriteString(benchreport.StageTable(rows, total))
		for _, r := range rows {
			if r.Stage == "dedup" {
				goal := "met"
				if r.Share >= 0.10 {
					goal = "**not met**"
				}
				fmt.Fprintf(&out, "\nGoal (dedup < 10%% of crawl CPU): %s (%.1f%%).\n", goal, 100*r.Share)
			}
		}
	}
	for _, sec := range []struct{ file, title string }{
		{"bench-dedup.txt", "### 3. dedup and normalization microbenchmarks, index benchmarks"},
		{"bench-growth.txt", "### 4a. Growth: dedup cost per page and index memory as the index grows"},
		{"bench-frontier.txt", "### 4b. Growth: crawl cost per URL as the frontier grows (frontier + Badger)"},
	} {
		bs, err := readBench(filepath.Join(dir, sec.file))
		if err != nil {
			return err
		}
		if len(bs) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n%s\n\n", sec.title)
		out.WriteString(benchreport.BenchTable(bs))
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if doc == "" {
		return nil
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return fmt.Errorf("read %s: %w", doc, err)
	}
	updated, err := benchreport.ReplaceSection(string(old), "<!-- bench:figures:begin -->", "<!-- bench:figures:end -->", out.String())
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	if err := os.WriteFile(doc, []byte(updated), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", doc, err)
	}
	return nil
}
