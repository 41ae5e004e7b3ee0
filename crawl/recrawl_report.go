package crawl

import (
	"context"

	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// reportChanges adds the latest recrawl's changes to d: the change class of
// every page it visited or found, and the counts.
func reportChanges(db *storage.DB, d *report.Data) error {
	rc := loadRecrawl(context.Background(), BadgerStore(db))
	if rc.round == 0 {
		return nil
	}
	ch := &report.Changes{Round: rc.round, Started: rc.started, ByChange: map[string]int{}}
	for _, c := range report.ChangeClasses() {
		ch.ByChange[c] = 0
	}
	type change struct {
		class   string
		sim     float64
		movedTo string
	}
	byURL := map[string]change{}
	sitemaps := map[string]bool{} // read again by the recrawl: not pages
	err := db.ForEachEvidence("sitemap", func(u string, _ []byte) error { sitemaps[u] = true; return nil })
	if err != nil {
		return err
	}
	err = db.ForEachPage(func(p *storage.Page) error {
		class, sim := changeOf(p, rc)
		if class == "" || sitemaps[p.URL] {
			return nil
		}
		ch.ByChange[class]++
		if rv := p.Revisit; rv != nil && rv.Round == rc.round {
			if rv.Conditional {
				ch.Conditional++
			}
			if rv.Status == 304 {
				ch.NotModified++
			}
		}
		c := change{class: class, sim: sim}
		if class == storage.ChangeMoved {
			c.movedTo = p.Revisit.Location
		}
		byURL[p.URL] = c
		return nil
	})
	if err != nil {
		return err
	}
	for i := range d.Pages {
		if c, ok := byURL[d.Pages[i].URL]; ok {
			d.Pages[i].Change, d.Pages[i].ChangeSimilarity, d.Pages[i].MovedTo = c.class, c.sim, c.movedTo
		}
	}
	d.Changes = ch
	return nil
}

// changeOf is a page's change class in recrawl rc: its revisit's, or new
// for a page with a 2xx response first fetched after the recrawl started,
// or "" when the recrawl neither visited nor found it.
func changeOf(p *storage.Page, rc recrawlRound) (string, float64) {
	if rv := p.Revisit; rv != nil {
		if rv.Round != rc.round {
			return "", 0
		}
		return rv.Change, rv.Similarity
	}
	if p.Status >= 200 && p.Status < 300 && !p.FetchedAt.Before(rc.started) {
		return report.ChangeNew, 0
	}
	return "", 0
}
