package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// TextWidth is the maximum width, in terminal columns, of a line written by
// WriteText.
const TextWidth = 100

// Limits of the text report.
const (
	textClusters       = 10 // clusters listed
	textClusterMembers = 5  // members listed per cluster
	textHostColumn     = 40 // width of the host column
	textBarWidth       = 40 // width of the class histogram bars
)

// WriteText writes a plain-text report that fits a TextWidth-column terminal:
// summary counts, pages by class, the per-host table, the ten largest
// duplicate clusters, mirrors and replicated prefixes. Long URLs and host
// names are shortened with an ellipsis in the middle, and control characters
// from the web are replaced so they cannot drive the terminal.
func WriteText(w io.Writer, d *Data) error {
	if d == nil {
		return fmt.Errorf("report: write text: %w", ErrNilData)
	}
	n := normalized(d)
	bw := bufio.NewWriter(w)
	t := &textWriter{w: bw}

	t.damage(n.Damage)
	t.summary(n)
	t.classes(n)
	t.workers(n.Workers)
	t.hosts(Hosts(n))
	t.clusters(Clusters(n))
	t.mirrors("MIRRORS", n.Mirrors)
	t.mirrors("REPLICATED PREFIXES", n.ReplicatedPrefixes)
	t.hostNotes(n.HostNotes)
	t.irrelevantParams(n.IrrelevantParams)
	t.missingSubtrees(n.MissingSubtrees)
	t.changes(n)

	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write text: %w", err)
	}
	return nil
}

// damage writes the store's damage first: the figures below leave out
// what it lost.
func (t *textWriter) damage(ds []string) {
	if len(ds) == 0 {
		return
	}
	t.line("STORE DAMAGED: the figures below leave out what could not be read")
	for _, d := range ds {
		t.line("  %s", d)
	}
	t.line("")
}

// textWriter writes lines to a bufio.Writer, whose error is sticky and
// reported by Flush.
type textWriter struct {
	w   *bufio.Writer
	buf []byte // scratch space for one line
}

// line writes one formatted line without trailing spaces.
func (t *textWriter) line(format string, args ...any) {
	t.buf = fmt.Appendf(t.buf[:0], format, args...)
	t.buf = append(bytes.TrimRight(t.buf, " "), '\n')
	t.w.Write(t.buf)
}

func (t *textWriter) heading(s string) {
	t.w.WriteByte('\n')
	t.line("%s", s)
	t.line("%s", strings.Repeat("-", displayWidth(s)))
}

func (t *textWriter) summary(d *Data) {
	t.line("HORSESHOE CRAWL REPORT")
	t.line("======================")
	fin := formatTime(d.Stats.Finished)
	if dur := duration(d.Stats); dur != "" {
		fin += " (" + dur + ")"
	}
	t.line("  %-10s %-26s %-10s %s", "started", formatTime(d.Stats.Started), "finished", fin)
	complete := "no (frontier not exhausted)"
	if d.Stats.Complete {
		complete = "yes (frontier exhausted)"
	}
	t.line("  %-10s %s", "complete", complete)
	filter := d.Filter
	if filter == "" {
		filter = "-"
	}
	t.line("  %-10s %s", "filter", truncateMiddle(filter, TextWidth-13))
	t.line("  %-10s %-12d %-10s %-12d %-7s %d", "pages", d.Stats.Pages, "requests", d.Stats.Requests,
		"hosts", d.Stats.Hosts)
	exact, near := d.Stats.ByClass[ClassExactDuplicate], d.Stats.ByClass[ClassNearDuplicate]
	t.line("  %-10s %d (%d exact, %d near); %d mirror-skipped, saving %d requests", "duplicates",
		exact+near, exact, near, d.Stats.ByClass[ClassMirrorSkipped], RequestsSaved(d))
	if a := d.Aliases; a != nil {
		t.line("  %-10s %d requests saved by canonical hints; %d withdrawn, %d of %d claims wrong, %d hosts distrusted",
			"aliases", a.RequestsSaved, a.Withdrawn, a.ClaimsWrong, a.ClaimsChecked, len(a.Distrusted))
	}
	if c := d.CopyPolicy; c != nil {
		loss := fmt.Sprintf("expected loss at most %.1f pages per prefix pair (at D = %d differing)", c.ExpectedLoss, c.ExpectedLossAtD)
		if c.Unbounded {
			loss = "expected loss unbounded (every differing page may be lost)"
		}
		fired := 0
		for _, p := range c.Pairs {
			if p.Fired {
				fired++
			}
		}
		t.line("  %-10s %s at rate %g (seed %d): %s; near-duplicate monitor fired on %d of %d prefix pairs",
			"copies", c.Policy, c.Rate, c.Seed, loss, fired, len(c.Pairs))
	}
}

func (t *textWriter) classes(d *Data) {
	t.heading("PAGES BY CLASS")
	total, most := 0, 0
	for _, v := range d.Stats.ByClass {
		total += v
		most = max(most, v)
	}
	for _, c := range classOrder(d.Stats.ByClass) {
		v := d.Stats.ByClass[c]
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(v) / float64(total)
		}
		bar := 0
		if most > 0 {
			bar = (v*textBarWidth + most - 1) / most
		}
		t.line("  %s %9d %6.1f%%  %s", pad(c, 20), v, pct, strings.Repeat("#", bar))
	}
}

// workers writes the workers of a shared crawl: a line of counters per
// worker, then its state and when it was last seen, its machine, pid and
// data dir, and its lease checks.
func (t *textWriter) workers(v *Workers) {
	if v == nil {
		return
	}
	t.heading(fmt.Sprintf("WORKERS (%d) of shared crawl %s: %d live, %d paused, %d left, %d dead",
		len(v.Rows), truncateMiddle(v.Crawl, 24), v.Live, v.Paused, v.Left, v.Dead))
	t.line("  records from %s", v.From)
	t.line("  %s %8s %8s %7s %7s %7s %9s %s", pad("WORKER", 30), "PAGES", "REQUESTS", "UNIQUE", "DUPS", "ERRORS", "TEXTS", "STATE")
	row := func(name string, c WorkerCounts, state string) {
		t.line("  %s %8d %8d %7d %7d %7d %9s %s", pad(name, 30), c.Pages, c.Requests, c.ByClass[ClassUnique],
			duplicates(c.ByClass), c.Errors, fmt.Sprintf("%d/%d", c.TextsAnswered, c.TextsFellBack), state)
	}
	for _, w := range v.Rows {
		row(w.ID, w.WorkerCounts, w.State)
		t.line("      %s", truncateMiddle(fmt.Sprintf("last seen %s, %s", formatTime(w.Heartbeat), w.StateText()), TextWidth-6))
		t.line("      %s", truncateMiddle(fmt.Sprintf("%s · pid %d · %s", w.Host, w.PID, w.Dir), TextWidth-6))
		t.line("      %s", leaseText(w.WorkerCounts))
	}
	row("TOTAL", v.Total, "")
	t.line("      %s", leaseText(v.Total))
}

// leaseText is a worker's lease-check counts as the text report writes
// them (WorkerCounts.LeaseChecks and after).
func leaseText(c WorkerCounts) string {
	return fmt.Sprintf("lease checks %d: %d gone, %d short, %d no answer; %d stale lease ends",
		c.LeaseChecks, c.LeaseGone, c.LeaseShort, c.LeaseNoAnswer, c.StaleLeaseEnds)
}

// duplicates counts the exact and near duplicates among a worker's records.
func duplicates(byClass map[string]int64) int64 {
	return byClass[ClassExactDuplicate] + byClass[ClassNearDuplicate]
}

func (t *textWriter) hosts(rows []HostRow) {
	t.heading(fmt.Sprintf("HOSTS (%d)", len(rows)))
	if len(rows) == 0 {
		t.line("  none")
		return
	}
	t.line("  %s %7s %7s %7s %7s %7s %7s %7s", pad("HOST", textHostColumn),
		"FETCHED", "UNIQUE", "EXACT", "NEAR", "MIRROR", "OTHER", "DUP%")
	var sum HostRow
	for _, r := range rows {
		t.line("  %s %7d %7d %7d %7d %7d %7d %6.1f%%", pad(r.Host, textHostColumn),
			r.Fetched, r.Unique, r.Exact, r.Near, r.MirrorSkipped, r.Other, 100*r.DupRatio)
		sum.Fetched += r.Fetched
		sum.Unique += r.Unique
		sum.Exact += r.Exact
		sum.Near += r.Near
		sum.MirrorSkipped += r.MirrorSkipped
		sum.Other += r.Other
	}
	if dup := sum.Exact + sum.Near + sum.MirrorSkipped; dup+sum.Unique > 0 {
		sum.DupRatio = float64(dup) / float64(dup+sum.Unique)
	}
	t.line("  %s %7d %7d %7d %7d %7d %7d %6.1f%%", pad("TOTAL", textHostColumn),
		sum.Fetched, sum.Unique, sum.Exact, sum.Near, sum.MirrorSkipped, sum.Other, 100*sum.DupRatio)
}

func (t *textWriter) clusters(cs []Cluster) {
	shown := min(len(cs), textClusters)
	t.heading(fmt.Sprintf("TOP DUPLICATE CLUSTERS (%d of %d)", shown, len(cs)))
	if len(cs) == 0 {
		t.line("  none")
		return
	}
	for i, c := range cs[:shown] {
		head := fmt.Sprintf("  %2d. %d %s of ", i+1, len(c.Members), plural(len(c.Members), "duplicate", "duplicates"))
		t.line("%s%s", head, truncateMiddle(c.Representative, TextWidth-displayWidth(head)))
		for _, m := range c.Members[:min(len(c.Members), textClusterMembers)] {
			method := m.Method
			if method == "" {
				method = "-"
			}
			prefix := fmt.Sprintf("      %s %5.3f %s ", pad(m.Class, 15), m.Similarity, pad(method, 12))
			t.line("%s%s", prefix, truncateMiddle(m.URL, TextWidth-displayWidth(prefix)))
		}
		if more := len(c.Members) - textClusterMembers; more > 0 {
			t.line("      … and %d more", more)
		}
	}
}

func (t *textWriter) mirrors(title string, ms []Mirror) {
	t.heading(fmt.Sprintf("%s (%d)", title, len(ms)))
	if len(ms) == 0 {
		t.line("  none")
		return
	}
	const side = (TextWidth - 2 - 4) / 2
	for _, m := range ms {
		t.line("  %s -> %s", pad(m.Host+m.Prefix, side), truncateMiddle(m.MirrorOf+m.OriginalPrefix, side))
		t.line("      score %.3f   paths matched %d of %d   requests saved %d",
			m.Score, m.PathsMatched, m.PathsCompared, m.RequestsSaved)
		if r := m.DifferRate(); r >= 0 {
			t.line("      verification: %d of %d fetched copies matched (est. %.1f%% of skipped pages differ)",
				m.VerifyMatched, m.Verified, 100*r)
		}
		if m.GapProbes > 0 {
			t.line("      gap probes: %d pages the original lacked, %d held new content", m.GapProbes, m.GapHits)
		}
		if m.LinksCompared > 0 {
			t.line("      links: %d of %d links of the copies map onto the originals' links", m.LinksMatched, m.LinksCompared)
		}
		t.line("      direction: %s", m.Direction())
	}
}

func (t *textWriter) hostNotes(notes []HostNote) {
	if len(notes) == 0 {
		return
	}
	t.heading(fmt.Sprintf("HOST NOTES (%d)", len(notes)))
	for _, n := range notes {
		if n.Kind == "gave_up" && displayWidth(sanitize(n.Detail)) > TextWidth-2-24-2-len(n.Kind)-2 {
			// The reason names the cause (a robots.txt's TLS or connect
			// error, say): in full, on a line of its own.
			t.line("  %s  %s:", pad(n.Host, 24), n.Kind)
			t.line("      %s", sanitize(n.Detail))
			continue
		}
		t.line("  %s  %s: %s", pad(n.Host, 24), n.Kind, truncateMiddle(n.Detail, TextWidth-2-24-2-len(n.Kind)-2))
	}
}

func (t *textWriter) irrelevantParams(ps []IrrelevantParam) {
	if len(ps) == 0 {
		return
	}
	t.heading(fmt.Sprintf("IRRELEVANT PARAMETERS (%d)", len(ps)))
	for _, p := range ps {
		state := "stripped"
		if p.Value != "" {
			state = "set to " + truncateMiddle(p.Value, 32)
		}
		if p.Withdrawn {
			state = "withdrawn"
		}
		t.line("  %s  %s: %s, %d duplicate %s on %d %s", pad(p.Host, 24), truncateMiddle(p.Param, 32), state,
			p.Pairs, plural(p.Pairs, "pair", "pairs"), p.Paths, plural(p.Paths, "URL", "URLs"))
		for _, e := range p.Examples {
			t.line("      %s", truncateMiddle(e.URL, TextWidth-6))
			t.line("        = %s", truncateMiddle(e.Other, TextWidth-10))
		}
		if p.Counter != nil {
			t.line("      %s", truncateMiddle(p.Counter.URL, TextWidth-6))
			t.line("        ≠ %s", truncateMiddle(p.Counter.Other, TextWidth-10))
		}
	}
}

func (t *textWriter) missingSubtrees(ms []MissingSubtree) {
	if len(ms) == 0 {
		return
	}
	t.heading(fmt.Sprintf("MISSING SUBTREES (%d)", len(ms)))
	for _, m := range ms {
		state := "skipped"
		if m.Withdrawn {
			state = "withdrawn"
		}
		t.line("  %s", truncateMiddle(m.Prefix, TextWidth-2))
		t.line("      %s side, %s: %d %s not found, none served (decided at %d, error rate %g)", m.Side, state,
			m.Lacks, plural(m.Lacks, "URL", "URLs"), m.Needed, m.ErrorRate)
		if m.Counterpart != "" {
			t.line("      fetched instead from %s", truncateMiddle(m.Counterpart, TextWidth-26))
		}
		if m.Counter != "" {
			t.line("      served later: %s", truncateMiddle(m.Counter, TextWidth-20))
		}
	}
}

func formatTime(tm time.Time) string {
	if tm.IsZero() {
		return "-"
	}
	return tm.UTC().Format("2006-01-02 15:04:05 UTC")
}

// duration formats the crawl's wall time, or "" when it is not known.
func duration(s Stats) string {
	if s.Started.IsZero() || s.Finished.IsZero() || s.Finished.Before(s.Started) {
		return ""
	}
	return s.Finished.Sub(s.Started).Round(time.Second).String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
