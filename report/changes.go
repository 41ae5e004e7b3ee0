package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Change classes of a recrawl, as stored in Page.Change.
const (
	ChangeNone    = "unchanged"         // same text, or 304 Not Modified
	ChangeTrivial = "trivially_changed" // a near duplicate of the previous version (a date, a footer, a counter)
	ChangeReal    = "changed"           // a real change
	ChangeNew     = "new"               // found by the recrawl, not in the earlier crawl
	ChangeMoved   = "moved"             // a redirect now: its target is fetched as a new page
	ChangeGone    = "gone"              // 404 or 410 now
	ChangeFailed  = "failed"            // the revisit could not tell (network error, 5xx): the stored version stays
)

// ChangeClasses returns the change classes in report order.
func ChangeClasses() []string {
	return []string{ChangeNone, ChangeTrivial, ChangeReal, ChangeNew, ChangeMoved, ChangeGone, ChangeFailed}
}

// Changes is the latest recrawl's summary: what became of the pages of the
// earlier crawl, and what is new.
type Changes struct {
	Round   int       `json:"round"`   // 1 for the first recrawl
	Started time.Time `json:"started"` // when it started
	// ByChange counts pages per change class; all seven are present.
	ByChange map[string]int `json:"by_change"`
	// Conditional counts revisits sent with a validator (If-None-Match or
	// If-Modified-Since); NotModified those answered 304 without a body.
	Conditional int `json:"conditional"`
	NotModified int `json:"not_modified"`
}

// ChangeRow is one change class and its count.
type ChangeRow struct {
	Change string
	Count  int
}

// Rows returns the counts in report order.
func (c *Changes) Rows() []ChangeRow {
	var rows []ChangeRow
	for _, k := range ChangeClasses() {
		rows = append(rows, ChangeRow{k, c.ByChange[k]})
	}
	return rows
}

// ChangedPages returns the pages of the latest recrawl that changed,
// trivially or really, are new, moved or gone, in that order and by URL.
func (d *Data) ChangedPages() []Page {
	rank := map[string]int{ChangeReal: 1, ChangeTrivial: 2, ChangeNew: 3, ChangeMoved: 4, ChangeGone: 5}
	var out []Page
	for _, p := range d.Pages {
		if rank[p.Change] > 0 {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Page) int {
		return cmp.Or(cmp.Compare(rank[a.Change], rank[b.Change]), strings.Compare(a.URL, b.URL))
	})
	return out
}

// maxChangeLines caps the pages the text report lists under CHANGES.
const maxChangeLines = 30

func (t *textWriter) changes(d *Data) {
	c := d.Changes
	if c == nil {
		return
	}
	t.heading(fmt.Sprintf("CHANGES (recrawl %d, started %s)", c.Round, formatTime(c.Started)))
	var parts []string
	for _, r := range c.Rows() {
		parts = append(parts, fmt.Sprintf("%s %d", r.Change, r.Count))
	}
	t.line("  %s", strings.Join(parts, ", "))
	t.line("  %d conditional %s, %d answered 304 Not Modified", c.Conditional, plural(c.Conditional, "request", "requests"), c.NotModified)
	pages := d.ChangedPages()
	for i, p := range pages {
		if i == maxChangeLines {
			t.line("  ... and %d more", len(pages)-i)
			break
		}
		sim := ""
		if p.Change == ChangeTrivial || p.Change == ChangeReal {
			sim = fmt.Sprintf(" %.3f", p.ChangeSimilarity)
		}
		u := p.URL
		if p.MovedTo != "" {
			u += " -> " + p.MovedTo
		}
		t.line("  %-17s%s  %s", p.Change, sim, truncateMiddle(u, TextWidth-2-17-len(sim)-2))
	}
}
