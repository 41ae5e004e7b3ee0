package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// MergedReport is one report of the workers' data dirs: their pages, mirrors
// and notes together, the counts summed, the crawl's span from the first
// start to the last finish, complete when every worker saw it end.
// The workers section shows the records the dirs kept (keptView).
func MergedReport(dirs []string, cfg configs.Config) (*report.Data, error) {
	c, err := crawl.ReportCurves(cfg.Dedup)
	if err != nil {
		return nil, err
	}
	var m merged
	for _, dir := range dirs {
		db, err := OpenExisting(dir)
		if err != nil {
			return nil, err
		}
		err = m.add(db, c)
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return m.result(), nil
}

// merged collects the reports of data dirs into one (MergedReport).
type merged struct {
	all  *report.Data
	kept []keptWorker
}

// add adds the report of the store db, with the curves c.
func (m *merged) add(db *storage.DB, c crawl.Curves) error {
	d, err := crawl.ReportWith(db, c)
	if err != nil {
		return err
	}
	k, err := keptWorkers(db)
	if err != nil {
		return err
	}
	m.kept = append(m.kept, k...)
	if m.all == nil {
		m.all = d
		return nil
	}
	all := m.all
	s := &all.Stats
	s.Pages += d.Stats.Pages
	s.Requests += d.Stats.Requests
	for c, n := range d.Stats.ByClass {
		s.ByClass[c] += n
	}
	if d.Stats.Started.Before(s.Started) {
		s.Started = d.Stats.Started
	}
	if d.Stats.Finished.After(s.Finished) {
		s.Finished = d.Stats.Finished
	}
	s.Complete = s.Complete && d.Stats.Complete
	all.Pages = append(all.Pages, d.Pages...)
	all.Mirrors = append(all.Mirrors, d.Mirrors...)
	all.ReplicatedPrefixes = append(all.ReplicatedPrefixes, d.ReplicatedPrefixes...)
	all.HostNotes = append(all.HostNotes, d.HostNotes...)
	all.IrrelevantParams = append(all.IrrelevantParams, d.IrrelevantParams...)
	all.MissingSubtrees = append(all.MissingSubtrees, d.MissingSubtrees...)
	all.Damage = append(all.Damage, d.Damage...)
	return nil
}

// result is the merged report: repeats dropped, the workers section and
// the host count of all the dirs.
func (m *merged) result() *report.Data {
	all := m.all
	all.Workers = keptView(m.kept)
	dropRepeats(all)
	dropStaleSkips(all)
	dropRepeatedNotes(all)
	all.Mirrors, all.ReplicatedPrefixes = mergeMirrors(all.Mirrors), mergeMirrors(all.ReplicatedPrefixes)
	hosts := map[string]bool{}
	for i := range all.Pages {
		hosts[report.PageHost(&all.Pages[i])] = true
	}
	all.Stats.Hosts = len(hosts)
	return all
}

// MergedExport writes the export of each data dir in turn to w: JSONL
// lines, or WARC files one after the other (a valid WARC: each part starts
// with its warcinfo record).
func MergedExport(w io.Writer, dirs []string, format, filename string, o export.JSONLOptions, wo export.WARCOptions) (int, error) {
	total := 0
	seen := map[string]bool{}
	for _, dir := range dirs {
		db, err := OpenExisting(dir)
		if err != nil {
			return total, err
		}
		var n int
		if format == "warc" {
			wo.Filename = filename
			n, err = ExportWARC(db, w, wo, "")
		} else {
			n, err = export.JSONL(&oncePerURL{w: w, seen: seen}, db, o)
		}
		if err == nil {
			err = DamageError(dir, db, "exported what could be read")
		}
		db.Close()
		total += n
		if err != nil {
			return total, fmt.Errorf("export %s: %w", dir, err)
		}
	}
	return total, nil
}

// dropRepeats drops the second record of a URL: a worker killed between
// its own commit and Redis's leaves a page that the next holder of its
// partition fetched again.
func dropRepeats(d *report.Data) {
	seen := map[string]bool{}
	kept := d.Pages[:0]
	for _, p := range d.Pages {
		if p.Class != "mirror_skipped" && seen[p.URL] {
			d.Stats.Pages--
			d.Stats.ByClass[p.Class]--
			continue
		}
		if p.Class != "mirror_skipped" {
			seen[p.URL] = true
		}
		kept = append(kept, p)
	}
	d.Pages = kept
}

// dropRepeatedNotes keeps one of equal host notes (a Crawl-delay capped is
// noted by each worker that read the host's robots.txt) and one
// rule per host and parameter (the withdrawn one, else the one with most
// evidence: each worker stores the rules it changed).
func dropRepeatedNotes(d *report.Data) {
	notes := map[report.HostNote]bool{}
	keptNotes := d.HostNotes[:0]
	for _, n := range d.HostNotes {
		if !notes[n] {
			notes[n] = true
			keptNotes = append(keptNotes, n)
		}
	}
	d.HostNotes = keptNotes
	at := map[[2]string]int{}
	keptRules := d.IrrelevantParams[:0]
	for _, r := range d.IrrelevantParams {
		k := [2]string{r.Host, r.Param}
		i, ok := at[k]
		if !ok {
			at[k] = len(keptRules)
			keptRules = append(keptRules, r)
			continue
		}
		if o := keptRules[i]; (r.Withdrawn && !o.Withdrawn) || (r.Withdrawn == o.Withdrawn && r.Pairs > o.Pairs) {
			keptRules[i] = r
		}
	}
	d.IrrelevantParams = keptRules
	atPrefix := map[string]int{}
	keptTrees := d.MissingSubtrees[:0]
	for _, r := range d.MissingSubtrees {
		i, ok := atPrefix[r.Prefix]
		if !ok {
			atPrefix[r.Prefix] = len(keptTrees)
			keptTrees = append(keptTrees, r)
			continue
		}
		if o := keptTrees[i]; (r.Withdrawn && !o.Withdrawn) || (r.Withdrawn == o.Withdrawn && r.Lacks > o.Lacks) {
			keptTrees[i] = r
		}
	}
	d.MissingSubtrees = keptTrees
}

// dropStaleSkips drops the skip records (mirror_skipped without a request)
// of URLs that a worker fetched after another had skipped them, and repeats
// of one skip, from the merged pages and their counts.
func dropStaleSkips(d *report.Data) {
	fetched := map[string]bool{}
	for _, p := range d.Pages {
		if p.Class != "mirror_skipped" {
			fetched[p.URL] = true
		}
	}
	skipped := map[string]bool{}
	kept := d.Pages[:0]
	for _, p := range d.Pages {
		if p.Class == "mirror_skipped" && (fetched[p.URL] || skipped[p.URL]) {
			d.Stats.Pages--
			d.Stats.ByClass[p.Class]--
			continue
		}
		if p.Class == "mirror_skipped" {
			skipped[p.URL] = true
		}
		kept = append(kept, p)
	}
	d.Pages = kept
}

// oncePerURL passes JSONL lines on, but for a URL's second record (a page
// fetched again after its worker was killed; a WARC keeps both captures).
type oncePerURL struct {
	w    io.Writer
	seen map[string]bool
	buf  []byte
}

func (o *oncePerURL) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	for {
		i := bytes.IndexByte(o.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := o.buf[:i+1]
		var r struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(line, &r) != nil || r.URL == "" || !o.seen[r.URL] {
			o.seen[r.URL] = r.URL != ""
			if _, err := o.w.Write(line); err != nil {
				return 0, err
			}
		}
		o.buf = o.buf[i+1:]
	}
}

// ReportDir builds the report of the crawl in dir and hands it to write; a
// damaged store's error (after the write) says the report shows what could
// be read.
func ReportDir(dir string, cfg configs.Config, write func(*report.Data) error) error {
	db, err := OpenExisting(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	d, err := Report(db, cfg)
	if err != nil {
		return err
	}
	if err := write(d); err != nil {
		return err
	}
	return DamageError(dir, db, "the report shows what could be read")
}

// Report is the report of the crawl in db (`crawler report`, `crawler
// serve`): its pages, the curves of cfg's detector, and the workers section
// from the records db keeps (a worker of a shared crawl).
func Report(db *storage.DB, cfg configs.Config) (*report.Data, error) {
	d, err := crawl.Report(db, cfg.Dedup)
	if err != nil {
		return nil, err
	}
	kept, err := keptWorkers(db)
	if err != nil {
		return nil, err
	}
	d.Workers = keptView(kept)
	return d, nil
}

// mergeMirrors lists each mirror once: every worker of a shared crawl
// reports the decisions of the crawl's mirror log, with the requests its
// own skips saved and the samples it fetched (summed); the rest of the
// evidence is the log's, the same in each (the largest is kept).
func mergeMirrors(ms []report.Mirror) []report.Mirror {
	type pair struct{ host, prefix, of, ofPrefix string }
	at := map[pair]int{}
	out := ms[:0:0]
	for _, m := range ms {
		k := pair{m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, m)
			continue
		}
		o := &out[i]
		o.RequestsSaved += m.RequestsSaved
		o.Samples += m.Samples
		if m.PathsCompared > o.PathsCompared {
			o.PathsCompared, o.PathsMatched, o.Score = m.PathsCompared, m.PathsMatched, m.Score
		}
		if m.Verified > o.Verified {
			o.Verified, o.VerifyMatched = m.Verified, m.VerifyMatched
		}
		o.GapProbes, o.GapHits = max(o.GapProbes, m.GapProbes), max(o.GapHits, m.GapHits)
		if m.LinksCompared > o.LinksCompared {
			o.LinksCompared, o.LinksMatched = m.LinksCompared, m.LinksMatched
		}
		if m.LacksMirror+m.LacksOriginal > o.LacksMirror+o.LacksOriginal {
			o.LacksMirror, o.LacksOriginal = m.LacksMirror, m.LacksOriginal
		}
		o.ByLacks = o.ByLacks || m.ByLacks
		o.Swaps = max(o.Swaps, m.Swaps)
	}
	return out
}
