// Command testsummary reads `go test -json` on stdin and writes what a
// plain `go test` would: each package's result line, the whole output of
// every test that failed (its logs, in order), build errors and panics; then
// the slowest top-level tests with their times. `make test-e2e` pipes the
// end-to-end tier through it, so every CI run shows where its time went.
//
//	go test -json ./... | go run ./internal/testsummary [-top N]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type timing struct {
	name    string
	elapsed float64
}

func main() {
	top := flag.Int("top", 20, "how many of the slowest tests to list")
	flag.Parse()
	if err := summarize(os.Stdin, os.Stdout, *top); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
}

func summarize(r io.Reader, w io.Writer, top int) error {
	out := bufio.NewWriter(w)
	defer out.Flush()
	logs := map[string][]string{} // package + test -> its output so far
	var times []timing
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (go vet's or the linker's words): as it came.
			fmt.Fprintf(out, "%s\n", line)
			out.Flush()
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, e.Output)
		case e.Test == "" && e.Action == "output":
			// The package's own lines: its result, a panic, a timeout.
			if o := strings.TrimSpace(e.Output); o != "PASS" && o != "FAIL" && !strings.HasPrefix(o, "=== ") {
				fmt.Fprint(out, e.Output)
			}
		case e.Test != "" && e.Action == "output":
			logs[key] = append(logs[key], e.Output)
		case e.Test != "" && e.Action == "fail":
			for _, o := range logs[key] {
				fmt.Fprint(out, o)
			}
			delete(logs, key)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			// A benchmark has no event of its own when it passes: its
			// results come out when its package ends, as go test prints
			// them.
			printBenchmarks(out, logs, e.Package)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
			delete(logs, key)
			if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				times = append(times, timing{e.Package[strings.LastIndex(e.Package, "/")+1:] + "." + e.Test, e.Elapsed})
			}
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "output" && e.Test == "" {
			out.Flush()
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Tests that never ended (the run was killed): their output, so a hang
	// names itself.
	for key, lines := range logs {
		fmt.Fprintf(out, "--- no result: %s\n", key)
		for _, o := range lines {
			fmt.Fprint(out, o)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].elapsed > times[j].elapsed })
	if len(times) > top {
		times = times[:top]
	}
	if len(times) > 0 {
		fmt.Fprintf(out, "\nslowest tests (wall time; parallel ones overlap):\n")
		for _, t := range times {
			fmt.Fprintf(out, "%8.1fs  %s\n", t.elapsed, t.name)
		}
	}
	return nil
}

// printBenchmarks prints and forgets the output of pkg's benchmarks, in name
// order, without their "=== RUN" lines.
func printBenchmarks(out io.Writer, logs map[string][]string, pkg string) {
	var keys []string
	for k := range logs {
		if strings.HasPrefix(k, pkg+" Benchmark") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, o := range logs[k] {
			if !strings.HasPrefix(o, "=== ") {
				fmt.Fprint(out, o)
			}
		}
		delete(logs, k)
	}
}
