package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// ReportData reads a crawl's store into the report model. filter describes
// the configured supershingle filter and curve is its P(match|J).
func ReportData(db *storage.DB, filter string, curve []report.CurvePoint) (*report.Data, error) {
	d := &report.Data{
		Mirrors:            []report.Mirror{},
		ReplicatedPrefixes: []report.Mirror{},
		Filter:             filter,
		Curve:              curve,
	}
	skips, err := reportPages(db, d)
	if err != nil {
		return nil, err
	}
	if err := reportMirrors(db, d, skips); err != nil {
		return nil, fmt.Errorf("mirror evidence: %w", err)
	}
	if err := reportHostNotes(db, d); err != nil {
		return nil, err
	}
	if d.IrrelevantParams, err = paramReport(db); err != nil {
		return nil, err
	}
	if d.MissingSubtrees, err = subtreeReport(db, d.Mirrors); err != nil {
		return nil, err
	}
	reportRun(db, d)
	if d.Aliases, err = aliasReport(context.Background(), BadgerStore(db)); err != nil {
		return nil, err
	}
	if err := reportChanges(db, d); err != nil {
		return nil, fmt.Errorf("recrawl changes: %w", err)
	}
	if d.CopyPolicy, err = copyPolicyReport(db); err != nil {
		return nil, fmt.Errorf("copy policy: %w", err)
	}
	return d, nil
}

// skipRec is a mirror_skipped URL and the counterpart it waits on.
type skipRec struct{ url, of string }

// reportPages adds the page and skip records to d, with the counts by class
// and host, and returns the skip records by origin (to count what each
// mirror decision saved).
func reportPages(db *storage.DB, d *report.Data) (map[string][]skipRec, error) {
	d.Stats.ByClass = map[string]int{}
	for _, c := range storage.Classes {
		d.Stats.ByClass[string(c)] = 0
	}
	hosts := map[string]bool{}
	skips := map[string][]skipRec{}
	read := 0
	add := func(p *storage.Page) error {
		if read++; read%128 == 0 {
			db.ReleaseMapped() // what was read need not stay resident (issue 30)
		}
		if p.Class == storage.ClassMirrorSkipped && p.Method != aliasMethod {
			o := mirror.Origin(p.URL)
			skips[o] = append(skips[o], skipRec{p.URL, p.DuplicateOf})
		}
		d.Pages = append(d.Pages, report.Page{
			URL: p.URL, Host: p.Host, Status: p.Status, ContentType: p.ContentType, Title: p.Title,
			Class: string(p.Class), DuplicateOf: p.DuplicateOf, Similarity: p.Similarity, Method: p.Method,
			Depth: p.Depth, FetchedAt: p.FetchedAt, Error: p.Error,
		})
		d.Stats.ByClass[string(p.Class)]++
		hosts[p.Host] = true
		return nil
	}
	if err := db.ForEachPage(add); err != nil {
		return nil, err
	}
	if err := db.ForEachSkipped(add); err != nil {
		return nil, err
	}
	sort.SliceStable(d.Pages, func(i, j int) bool { return d.Pages[i].FetchedAt.Before(d.Pages[j].FetchedAt) })
	d.Stats.Pages = len(d.Pages)
	d.Stats.Hosts = len(hosts)
	return skips, nil
}

// reportMirrors adds the decided mirror candidates to d: mirrors, and
// prefixes replicated within one host.
func reportMirrors(db *storage.DB, d *report.Data, skips map[string][]skipRec) error {
	return db.ForEachEvidence("mirror", func(_ string, v []byte) error {
		var c mirror.Candidate
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		if !c.Decided {
			return nil
		}
		m := c.MirrorMapping()
		// Requests saved: the URLs standing skipped in favour of their
		// counterpart under this mapping (a skip undone later, when the
		// counterpart failed, saved nothing).
		// URLs skipped under a direction the candidate later reversed
		// (mirror.Detector.Lack) stand skipped on the new original's side
		// and count too.
		saved := 0
		dirs := []mirror.Mapping{m}
		if c.Swaps > 0 {
			dirs = append(dirs, c.MapFrom(1-c.Mirror))
		}
		for _, mp := range dirs {
			for _, r := range skips[mp.FromOrigin] {
				if cp, ok := mp.Apply(r.url); ok && cp == r.of {
					saved++
				}
			}
		}
		row := report.Mirror{
			Host: hostOf(m.FromOrigin), Prefix: m.FromPrefix, MirrorOf: hostOf(m.ToOrigin), OriginalPrefix: m.ToPrefix,
			PathsCompared: c.Compared + c.Verified, PathsMatched: c.Matched + c.VerifyMatched, RequestsSaved: saved,
			Verified: c.Verified, VerifyMatched: c.VerifyMatched, GapProbes: c.GapResolved, GapHits: c.GapHits,
			Samples: c.Sampled, LinksCompared: c.LinksCompared, LinksMatched: c.LinksMatched,
			LacksMirror: c.Lacks(c.Mirror), LacksOriginal: c.Lacks(1 - c.Mirror), ByLacks: c.ByLacks, Swaps: c.Swaps,
			Halted: c.Halted,
		}
		if row.PathsCompared > 0 {
			row.Score = float64(row.PathsMatched) / float64(row.PathsCompared)
		}
		if c.SameHost() {
			d.ReplicatedPrefixes = append(d.ReplicatedPrefixes, row)
		} else {
			d.Mirrors = append(d.Mirrors, row)
		}
		return nil
	})
}

// reportHostNotes adds the hosts given up and the Crawl-delays capped.
func reportHostNotes(db *storage.DB, d *report.Data) error {
	d.HostNotes = []report.HostNote{}
	for _, kind := range []string{"giveup", "crawldelay"} {
		err := db.ForEachEvidence(kind, func(host string, v []byte) error {
			var n struct {
				Reason    string `json:"reason"`
				Requested string `json:"requested"`
				Applied   string `json:"applied"`
			}
			if err := json.Unmarshal(v, &n); err != nil {
				return err
			}
			if kind == "giveup" {
				d.HostNotes = append(d.HostNotes, report.HostNote{Host: host, Kind: "gave_up", Detail: n.Reason})
			} else {
				d.HostNotes = append(d.HostNotes, report.HostNote{Host: host, Kind: "crawl_delay_capped",
					Detail: fmt.Sprintf("robots.txt Crawl-delay %s capped at %s", n.Requested, n.Applied)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s notes: %w", kind, err)
		}
	}
	sitemaps, err := sitemapNotes(db)
	if err != nil {
		return err
	}
	d.HostNotes = append(d.HostNotes, sitemaps...)
	return nil
}

// reportRun adds the run metadata: requests, start and end, completeness.
func reportRun(db *storage.DB, d *report.Data) {
	if b, err := db.GetMeta(storage.MetaRequests); err == nil {
		d.Stats.Requests, _ = strconv.Atoi(string(b))
	}
	if b, err := db.GetMeta(storage.MetaStarted); err == nil {
		d.Stats.Started, _ = time.Parse(time.RFC3339Nano, string(b))
	}
	if b, err := db.GetMeta(storage.MetaFinished); err == nil {
		d.Stats.Finished, _ = time.Parse(time.RFC3339Nano, string(b))
	}
	if b, err := db.GetMeta(storage.MetaComplete); err == nil {
		d.Stats.Complete = string(b) == "true"
	}
}

// FilterName describes a supershingle filter for reports.
func FilterName(preset string, k, s, r, bits int) string {
	return fmt.Sprintf("%s: %d supershingles of %d samples (%d-bit), match if >= %d agree", preset, k, s, bits, r)
}

func hostOf(origin string) string {
	if i := strings.Index(origin, "://"); i >= 0 {
		return origin[i+3:]
	}
	return origin
}
