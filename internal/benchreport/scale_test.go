package benchreport

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseAccessLog(t *testing.T) {
	hits, err := ParseAccessLog(strings.NewReader("1700000000.125 127.20.0.1 200 /p/1.html\n\n1700000000.500 127.20.0.2 404 /robots.txt\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{1700000000.125, "127.20.0.1", 200, "/p/1.html"}, {1700000000.5, "127.20.0.2", 404, "/robots.txt"}}
	if fmt.Sprint(hits) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", hits, want)
	}
	for _, bad := range []string{"x 127.0.0.1 200 /", "1.5 127.0.0.1 OK /", "1.5 127.0.0.1 200"} {
		if _, err := ParseAccessLog(strings.NewReader(bad + "\n")); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: err %v, want ErrFormat", bad, err)
		}
	}
}

// TestSteadyRate: a crawl at 100 pages/s with a slow start and a slow tail
// is measured at 100/s, not at its mean rate.
func TestSteadyRate(t *testing.T) {
	var times []float64
	for i := range 50 { // 50 pages over 5 s
		times = append(times, float64(i)*0.1)
	}
	for i := range 900 { // 900 at 100/s
		times = append(times, 5+float64(i)*0.01)
	}
	for i := range 50 { // 50 over 10 s
		times = append(times, 14+float64(i)*0.2)
	}
	if r := SteadyRate(times); math.Abs(r-100) > 1 {
		t.Fatalf("steady rate %.1f, want 100", r)
	}
	if mean := 1000 / (times[len(times)-1] - times[0]); mean > 50 {
		t.Fatalf("the test's mean rate %.1f should be far below the steady one", mean)
	}
	if !math.IsNaN(SteadyRate(times[:5])) || !math.IsNaN(SteadyRate(make([]float64, 20))) {
		t.Fatal("SteadyRate of too few events or no time: want NaN")
	}
}

func TestAnalyzeHits(t *testing.T) {
	var hits []Hit
	for h := range 4 {
		host := fmt.Sprintf("127.20.0.%d", h+1)
		hits = append(hits, Hit{At: 100, Host: host, Status: 404, Path: "/robots.txt"})
		for p := range 5 {
			hits = append(hits, Hit{At: 100.5 + float64(p)*0.5 + float64(h)*0.01, Host: host, Status: 200, Path: fmt.Sprintf("/p/%d.html", p)})
		}
	}
	// One page fetched twice, 0.3 s after the previous request to its host
	// (and logged out of order).
	hits = append([]Hit{{At: 101.31, Host: "127.20.0.2", Status: 200, Path: "/p/1.html"}}, hits...)
	var r ScaleRun
	AnalyzeHits(&r, hits)
	if r.Requests != 25 || r.Pages != 20 || r.Repeats != 1 {
		t.Errorf("requests %d, pages %d, repeats %d: want 25, 20, 1", r.Requests, r.Pages, r.Repeats)
	}
	if r.MinGap < 199*time.Millisecond || r.MinGap > 201*time.Millisecond {
		t.Errorf("closest gap %s, want 200ms (101.31 after 101.01 on 127.20.0.2 is 300ms, 101.51 after it 200ms)", r.MinGap)
	}
	if r.MeanGap < 499*time.Millisecond || r.MeanGap > 501*time.Millisecond {
		t.Errorf("mean gap %s, want 500ms (the repeat is not a page of its own)", r.MeanGap)
	}
	if r.Span < 2500*time.Millisecond || r.Span > 2600*time.Millisecond {
		t.Errorf("span %s", r.Span)
	}
	if math.IsNaN(r.Rate) || r.Rate < 5 || r.Rate > 12 {
		t.Errorf("rate %.1f, want about 8 (4 hosts every 0.5 s)", r.Rate)
	}
}

func TestScaleTargets(t *testing.T) {
	run := func(mode string, d time.Duration, rate float64) ScaleRun {
		r := ScaleRun{Mode: mode, Delay: d, Hosts: 1000, Rate: rate, Pages: 20000, WorkerCPU: 20 * time.Second, Workers: 2, Span: 20 * time.Second}
		if d > 0 { // each host's gap: the limit's share is the rate's
			r.MeanGap = time.Duration(float64(time.Second) * 1000 / rate)
		}
		return r
	}
	runs := []ScaleRun{
		run("embedded", 0, 1000), run("redis-1", 0, 800), run("redis-2", 0, 1500),
		run("embedded", 0, 1100), run("redis-1", 0, 700), run("redis-2", 0, 1700),
		run("embedded", 0, 900), run("redis-1", 0, 900), run("redis-2", 0, 1600),
		run("embedded", 3*time.Second, 330), run("redis-1", 3*time.Second, 300), run("redis-2", 3*time.Second, 320),
	}
	sums := SummarizeScale(runs)
	if len(sums) != 6 || sums[0].Mode != "embedded" || sums[0].Rate != 1000 || sums[0].RateLo != 900 || sums[0].RateHi != 1100 || sums[0].CPUPer1000 != 1 || sums[0].CoreUse != 0.5 {
		t.Fatalf("summaries %+v", sums)
	}
	got := strings.Join(ScaleTargets(sums), "\n")
	for _, want := range []string{
		"2 Redis workers / 1 Redis worker = 2.000 (target >= 1.8): met",
		"delay 0s: 1 Redis worker / embedded = 0.800 (target >= 0.75, within 25%): met",
		"delay 3s: embedded at 0.990 of the politeness limit 333 pages/s (target >= 0.95): met",
		"delay 3s: redis-1 at 0.900 of the politeness limit 333 pages/s (target >= 0.95): **not met**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("targets lack %q:\n%s", want, got)
		}
	}
	table := ScaleTable(sums)
	if !strings.Contains(table, "| 0s | redis-2 | 3 | 1600 (1500-1700) | - |") || !strings.Contains(table, "| 3s | redis-2 | 1 | 320 (320-320) | 0.960 of 333/s | 20000 (0) | 0s, 3.125s |") {
		t.Errorf("table:\n%s", table)
	}
}
