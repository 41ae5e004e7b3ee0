package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Metric is one value/unit pair of a benchmark line.
type Metric struct {
	Value float64
	Unit  string
}

// Bench is one `go test -bench` result line.
type Bench struct {
	Pkg     string // from the preceding "pkg:" line
	Name    string // without the Benchmark prefix and the -GOMAXPROCS suffix
	N       int
	Metrics []Metric
}

// Get returns the value of unit, and whether the line has it.
func (b Bench) Get(unit string) (float64, bool) {
	for _, m := range b.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// ParseGoBench reads `go test -bench` output; other lines are ignored.
func ParseGoBench(r io.Reader) ([]Bench, error) {
	var out []Bench
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a name printed alone (sub-benchmark header) or a log line
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		b := Bench{Pkg: pkg, Name: benchName(f[0]), N: n}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%w: benchmark value %q in %q", ErrFormat, f[i], line)
			}
			b.Metrics = append(b.Metrics, Metric{Value: v, Unit: f[i+1]})
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("benchreport: read benchmarks: %w", err)
	}
	return out, nil
}

// benchName strips "Benchmark" and a trailing "-N" (GOMAXPROCS).
func benchName(s string) string {
	s = strings.TrimPrefix(s, "Benchmark")
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	return s
}

// BenchTable renders benchmarks as a Markdown table: name, time per
// operation, then every other metric as "value unit".
func BenchTable(bs []Bench) string {
	var sb strings.Builder
	sb.WriteString("| package | benchmark | time/op | other metrics |\n|---|---|---|---|\n")
	for _, b := range bs {
		var per string
		var rest []string
		for _, m := range b.Metrics {
			if m.Unit == "ns/op" {
				per = formatNs(m.Value)
				continue
			}
			rest = append(rest, formatMetric(m))
		}
		pkg := strings.TrimPrefix(b.Pkg, Module)
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", pkg, b.Name, per, strings.Join(rest, ", "))
	}
	return sb.String()
}

func formatNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.1f ns", ns)
	}
}

func formatMetric(m Metric) string {
	v := m.Value
	switch {
	case v == float64(int64(v)) && v < 1e15:
		return fmt.Sprintf("%d %s", int64(v), m.Unit)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, m.Unit)
	case v >= 1:
		return fmt.Sprintf("%.2f %s", v, m.Unit)
	default:
		return fmt.Sprintf("%.4g %s", v, m.Unit)
	}
}
