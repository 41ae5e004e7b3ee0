package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// leaseWorkers is a shared crawl's view of two workers whose lease-check
// counts are all distinct (and distinct from their sums).
func leaseWorkers() *Workers {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := &Workers{Crawl: "c1", From: WorkersFromDirs, Rows: []Worker{}}
	v.Add(Worker{ID: "m1-10-a", Host: "m1", PID: 10, Dir: "/data/a", State: WorkerLeft, Started: t0, Heartbeat: t0.Add(time.Hour),
		WorkerCounts: WorkerCounts{Pages: 40, Requests: 45, ByClass: map[string]int64{"unique": 40},
			LeaseChecks: 1201, LeaseGone: 3, LeaseShort: 5, LeaseNoAnswer: 7, StaleLeaseEnds: 11}})
	v.Add(Worker{ID: "m2-11-b", Host: "m2", PID: 11, Dir: "/data/b", State: WorkerLeft, Started: t0, Heartbeat: t0.Add(time.Hour),
		WorkerCounts: WorkerCounts{Pages: 5, Requests: 6, ByClass: map[string]int64{"unique": 5},
			LeaseChecks: 2302, LeaseGone: 13, LeaseShort: 17, LeaseNoAnswer: 19, StaleLeaseEnds: 23}})
	return v
}

// TestWorkersLeaseChecksText: the text report's workers section has a line
// of lease-check counts per worker and one of the crawl's sums, each count
// in its place, within the text width.
func TestWorkersLeaseChecksText(t *testing.T) {
	d := sampleData(t)
	d.Workers = leaseWorkers()
	var buf bytes.Buffer
	if err := WriteText(&buf, d); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"\n      lease checks 1201: 3 gone, 5 short, 7 no answer; 11 stale lease ends\n",
		"\n      lease checks 2302: 13 gone, 17 short, 19 no answer; 23 stale lease ends\n",
		"\n  TOTAL" + strings.Repeat(" ", 25) + "       45       51",
		"\n      lease checks 3503: 16 gone, 22 short, 26 no answer; 34 stale lease ends\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if n := displayWidth(line); n > TextWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
}

// TestWorkersLeaseChecksHTML: the HTML report's workers table has a lease
// checks column: per worker and in the totals row, checks · gone / short /
// no answer · stale ends.
func TestWorkersLeaseChecksHTML(t *testing.T) {
	d := sampleData(t)
	d.Workers = leaseWorkers()
	out := renderHTML(t, d)
	for _, want := range []string{
		"Lease checks · gone / short / no answer · stale ends</th>",
		`<td class="n">1,201 · 3 / 5 / 7 · 11</td></tr>`,
		`<td class="n">2,302 · 13 / 17 / 19 · 23</td></tr>`,
		`<td class="n">3,503 · 16 / 22 / 26 · 34</td></tr></tfoot>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}
