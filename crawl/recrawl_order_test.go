package crawl

import (
	"slices"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRevisitOrder: a recrawl revisits first what a sitemap says changed
// since the stored version, then by change history (Laplace's rule), then the
// oldest version; what a sitemap says did not change comes last.
func TestRevisitOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	page := func(id uint64, fetched time.Time, visits, changes int) *storage.Page {
		p := &storage.Page{ID: id, FetchedAt: fetched}
		if visits > 0 {
			p.Revisit = &storage.Revisit{Visits: visits, Changes: changes}
		}
		return p
	}
	cands := []revisitCand{
		{page: page(1, t0, 4, 0)},                                                // revisited 4 times, never changed: 1/6
		{page: page(2, t0, 0, 0), lastmod: t0.Add(-time.Hour)},                   // sitemap: not changed since
		{page: page(3, t0.Add(time.Hour), 0, 0)},                                 // never revisited, newer: 1/2
		{page: page(4, t0, 2, 2)},                                                // changed every time: 3/4
		{page: page(5, t0, 0, 0)},                                                // never revisited: 1/2
		{page: page(6, t0, 10, 0), lastmod: t0.Add(time.Hour)},                   // sitemap: changed since
		{page: page(7, t0.Add(-time.Hour), 4, 0)},                                // as 1, older
		{page: page(8, t0.Add(time.Hour), 3, 1), lastmod: t0.Add(2 * time.Hour)}, // sitemap: changed since, history 2/5
	}
	slices.SortFunc(cands, revisitOrder)
	var got []uint64
	for _, c := range cands {
		got = append(got, c.page.ID)
	}
	want := []uint64{8, 6, 4, 5, 3, 7, 1, 2} // 8 before 6: within a tier, history (2/5 against 1/12)
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
