//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// sharedQualityEnv runs TestSharedCorpusQuality (several minutes: two crawls
// of the whole corpus, a reference crawl, wget and the exact measures).
const sharedQualityEnv = "HORSESHOE_SHARED_QUALITY"

// corpusMirrors are the mirror pairs the corpus's MANIFEST.tsv describes
// (copy -> original, host and prefix): the partial mirrors of pgsql, git
// latest and flink, and the man pages converted again 75 s later. The git
// 2.39 builds (127.0.0.4/doc/git/ and 127.0.0.5/v2.39/, "cross-source
// near-dup") are the same release built twice: reporting them is not
// false. Any other pair is: two versions of one documentation (git 2.39 and
// 2.55, npm's versions) or unrelated sites.
var (
	corpusMirrors = []string{
		"127.0.0.3/pgsql/15.18/ -> 127.0.0.2/docs/15/",
		"127.0.0.6/latest/ -> 127.0.0.5/v2.55/",
		"127.0.0.9/ -> 127.0.0.8/",
		"127.0.0.12/linux/man-pages/ -> 127.0.0.11/man/",
	}
	corpusSameBuild = "127.0.0.4/doc/git/ -> 127.0.0.5/v2.39/"
)

// sharedQualityFigures are one crawl's quality figures on the whole corpus
// (written to $HORSESHOE_QUALITY_OUT for BENCHMARKS.md).
//
//   - Recall at J >= 0.95: the share of the pairs of fetched HTML pages with
//     exact J >= pairJaccard that the crawl did not keep both of (1 - the
//     "pairs left" fraction of TestCorpusQuality).
//   - Coverage: the share of the pages of the Horseshoe reference crawl
//     (every link followed, no mirror handling) that the crawl kept or
//     represents by a kept page at exact J >= lostJaccard (1 - the content
//     lost against that reference).
//   - Content lost: the share of the pages wget -r -np saved that the crawl
//     neither kept nor represents (the measure docs/MIRRORS.md and
//     BENCHMARKS.md quote against the 0.1% target).
type sharedQualityFigures struct {
	Crawl            string         `json:"crawl"`
	Seconds          float64        `json:"seconds"`
	Requests         int            `json:"requests"` // the servers' log, robots.txt included
	RequestedTwice   []string       `json:"requested_twice"`
	HTMLPages        int            `json:"html_pages"` // fetched, with words
	Kept             int            `json:"kept_pages"`
	MirrorSkipped    int            `json:"mirror_skipped"`
	PairsAt95        int            `json:"pairs_at_0.95_fetched"`
	PairsLeft        int            `json:"pairs_at_0.95_left"`
	Recall95         float64        `json:"recall_at_0.95"`
	ReferencePages   int            `json:"reference_pages"`
	ReferenceLost    int            `json:"reference_lost"`
	Coverage         float64        `json:"coverage"`
	WgetPages        int            `json:"wget_pages"`
	WgetLost         int            `json:"wget_lost"`
	WgetLostFraction float64        `json:"wget_lost_fraction"`
	LostPages        []lostPage     `json:"lost_pages"`      // against the reference crawl
	WgetLostPages    []lostPage     `json:"wget_lost_pages"` // against wget
	LostByCause      map[string]int `json:"lost_by_cause"`   // against the reference crawl
	Mirrors          []string       `json:"mirrors"`         // host+prefix -> original
	Replicated       []string       `json:"replicated_prefixes"`
	MirrorsFound     []string       `json:"corpus_mirrors_found"`
	MirrorsMissed    []string       `json:"corpus_mirrors_missed"`
	MirrorsFalse     []string       `json:"mirrors_false"`
}

// TestSharedCorpusQuality (issue 26): the whole corpus (every MANIFEST
// prefix, delay 0, the default configuration: mirror detection on) crawled
// by one process and by three workers of one shared crawl through a real
// redis-server, with the same measures for both: recall at J >= 0.95,
// coverage and content lost (sharedQualityFigures), the corpus's mirror
// pairs found, requests. It asserts what every correct crawl meets: no URL
// requested twice by either crawl, and TestCorpusQuality's bounds (content
// lost under maxLostFraction against both references, pairs left under
// maxPairsLeftFraction); issue 26's targets (recall >= 0.99, coverage >=
// 0.998, content lost <= 0.1%, the four mirror pairs found, none false) are
// reported, not asserted: one process sits at the 0.1% target, not under it
// with margin (docs/MIRRORS.md). Run with HORSESHOE_SHARED_QUALITY=1.
func TestSharedCorpusQuality(t *testing.T) {
	if os.Getenv(sharedQualityEnv) == "" {
		t.Skipf("set %s=1 to crawl the whole corpus by one process and by three workers (several minutes)", sharedQualityEnv)
	}
	root := corpusRoot(t)
	_, manifest, err := testweb.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	det, err := dedup.New(crawl.DedupOptions(configs.Default().Dedup))
	if err != nil {
		t.Fatal(err)
	}
	web, seeds := sharedWeb(t, nil)
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})

	// wget first, while the heap is small (as in TestCorpusQuality).
	wref, _ := wgetReference(t, root, manifest, web, det)
	refDir, _, toWeb, refElapsed := referenceCrawl(t, root, manifest, web)
	t.Logf("references: wget %d HTML pages with words; Horseshoe reference crawl %s", len(wref.pages), refElapsed.Round(time.Millisecond))

	tmp := t.TempDir()
	single := filepath.Join(tmp, "single")
	start := time.Now()
	var so, se bytes.Buffer
	if err := run(context.Background(), append([]string{"crawl", "--data", single, "--delay", "0", "--workers", "8"}, seeds...), &so, &se); err != nil {
		t.Fatalf("one process: %v\n%s", err, se.String())
	}
	singleElapsed := time.Since(start)
	singleReqs := web.Requests()

	dirs := make([]string, 3)
	errs := make([]error, len(dirs))
	logs := make([]bytes.Buffer, len(dirs))
	start = time.Now()
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("w%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			args := append([]string{"crawl", "--data", dirs[i], "--delay", "0", "--workers", "8", "--redis", srv.URL(), "--crawl", "quality"}, seeds...)
			errs[i] = run(context.Background(), args, &out, &logs[i])
		}()
	}
	wg.Wait()
	workersElapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, logs[i].String())
		}
	}
	workerReqs := web.Requests()[len(singleReqs):]
	for i := range logs {
		t.Logf("worker %d: %s; %s", i, lineOf(logs[i].String(), "remote texts"), lineOf(logs[i].String(), "mirror log followed"))
	}

	identity := func(u string) string { return u }
	one, err := loadCrawl(single, det, identity, nil)
	if err != nil {
		t.Fatalf("one process's store: %v", err)
	}
	three, twiceRecorded := loadCrawls(t, det, dirs)
	keptBy := func(cr *crawlRecords) map[string]bool {
		k := map[string]bool{}
		for _, p := range cr.pages {
			if p.class == storage.ClassUnique {
				k[p.url] = true
			}
		}
		return k
	}
	k1, k3 := keptBy(one), keptBy(three)
	ref, err := loadCrawl(refDir, det, toWeb, func(u string) bool { return !k1[u] || !k3[u] })
	if err != nil {
		t.Fatalf("reference crawl's store: %v", err)
	}

	var figs []sharedQualityFigures
	for _, c := range []struct {
		name    string
		cr      *crawlRecords
		dirs    []string
		reqs    []loopweb.Request
		elapsed time.Duration
		log     string // the decisions are the same in every worker's log
	}{{"one process", one, []string{single}, singleReqs, singleElapsed, se.String()},
		{"three workers", three, dirs, workerReqs, workersElapsed, logs[0].String()}} {
		f := sharedQualityFigures{Crawl: c.name, Seconds: c.elapsed.Seconds(), Requests: len(c.reqs),
			RequestedTwice: requestedTwice(c.reqs), HTMLPages: len(c.cr.pages), MirrorSkipped: c.cr.skipped}
		for _, u := range f.RequestedTwice {
			t.Errorf("%s: requested twice: %s", c.name, u)
		}
		kept := newKeptSets(c.cr)
		f.Kept = len(kept.sets)
		var pr qualityResult
		measurePairs(t, &pr, c.cr)
		f.PairsAt95, f.PairsLeft, f.Recall95 = pr.PairsAt95, pr.PairsLeft, 1-pr.PairsLeftFraction
		lr := measureLost(seeds, kept, ref)
		f.ReferencePages, f.ReferenceLost, f.Coverage, f.LostPages, f.LostByCause = lr.pages, lr.lost, 1-lr.fraction, lr.lostPages, lr.byCause
		lw := measureLost(seeds, kept, wref)
		f.WgetPages, f.WgetLost, f.WgetLostFraction, f.WgetLostPages = lw.pages, lw.lost, lw.fraction, lw.lostPages
		d := mergedReportOf(t, c.dirs...)
		f.Mirrors, f.Replicated = mirrorPairs(d.Mirrors), mirrorPairs(d.ReplicatedPrefixes)
		f.MirrorsFound, f.MirrorsMissed, f.MirrorsFalse = judgeCorpusMirrors(f.Mirrors)

		t.Logf("== %s: %d requests in %.1fs, %d HTML pages with words, %d kept, %d mirror-skipped records",
			c.name, f.Requests, f.Seconds, f.HTMLPages, f.Kept, f.MirrorSkipped)
		t.Logf("%s: recall at J >= %.2f %.4f (%d of %d pairs of fetched pages left); coverage %.4f; content lost against wget %d of %d (%.3f%%)",
			c.name, pairJaccard, f.Recall95, f.PairsLeft, f.PairsAt95, f.Coverage, f.WgetLost, f.WgetPages, 100*f.WgetLostFraction)
		for _, p := range pr.LeftPairs {
			t.Logf("  left %s ~ %s J %.3f", p.A, p.B, p.J)
		}
		logLost(t, c.name+": the reference crawl", lr)
		logLost(t, c.name+": wget", lw)
		for _, m := range d.Mirrors {
			t.Logf("%s: mirror %s%s -> %s%s: %d of %d compared paths matched, score %.2f, %d skips saved, verified %d/%d",
				c.name, ipOf(m.Host), m.Prefix, ipOf(m.MirrorOf), m.OriginalPrefix, m.PathsMatched, m.PathsCompared, m.Score, m.RequestsSaved, m.VerifyMatched, m.Verified)
		}
		for _, l := range strings.Split(c.log, "\n") {
			if strings.Contains(l, "mirror detected") || strings.Contains(l, "mirror candidate withdrawn") || strings.Contains(l, "mirror skipping stopped") {
				t.Logf("%s log: %s", c.name, l)
			}
		}
		t.Logf("%s: mirrors %v; replicated prefixes %v; the corpus's found %d of %d %v, missed %v, false %v",
			c.name, f.Mirrors, f.Replicated, len(f.MirrorsFound), len(corpusMirrors), f.MirrorsFound, f.MirrorsMissed, f.MirrorsFalse)
		if pr.PairsLeftFraction >= maxPairsLeftFraction {
			t.Errorf("%s: pairs left: %d of %d pairs with J >= %.2f, bound under %.0f%%",
				c.name, f.PairsLeft, f.PairsAt95, pairJaccard, 100*maxPairsLeftFraction)
		}
		figs = append(figs, f)
	}
	if twiceRecorded > 0 {
		t.Logf("three workers: %d URLs hold a fetched page in two workers' stores", twiceRecorded)
	}
	for _, f := range figs {
		t.Logf("issue 26 targets, %s: recall %.4f (>= 0.99: %v), coverage %.4f (>= 0.998: %v), content lost %.3f%% (<= 0.1%%: %v), corpus mirrors %d of %d, %d false",
			f.Crawl, f.Recall95, f.Recall95 >= 0.99, f.Coverage, f.Coverage >= 0.998, 100*f.WgetLostFraction, f.WgetLostFraction <= 0.001,
			len(f.MirrorsFound), len(corpusMirrors), len(f.MirrorsFalse))
	}
	if out := os.Getenv(qualityOutEnv); out != "" {
		b, err := json.MarshalIndent(figs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadCrawls reads the stores of a shared crawl's workers as one crawl's
// records (the URLs are those of one web), and counts the URLs whose fetched
// page is in more than one store.
func loadCrawls(t *testing.T, det *dedup.Detector, dirs []string) (*crawlRecords, int) {
	t.Helper()
	all := &crawlRecords{byURL: map[string]*recordOf{}}
	fetched := map[string]bool{}
	twice := 0
	for _, dir := range dirs {
		cr, err := loadCrawl(dir, det, func(u string) string { return u }, nil)
		if err != nil {
			t.Fatalf("store %s: %v", dir, err)
		}
		for _, p := range cr.pages {
			if fetched[p.url] {
				twice++
			}
			fetched[p.url] = true
		}
		all.pages = append(all.pages, cr.pages...)
		for u, r := range cr.byURL {
			// A page record wins over a skip record of another worker.
			if old, ok := all.byURL[u]; !ok || old.class == string(storage.ClassMirrorSkipped) {
				all.byURL[u] = r
			}
		}
		all.records += cr.records
		all.skipped += cr.skipped
		all.request += cr.request
		all.checked += cr.checked
		all.differ = append(all.differ, cr.differ...)
	}
	return all, twice
}

// requestedTwice returns the URLs (host and path) requested more than once,
// robots.txt apart (each worker keeps its own robots.txt cache).
func requestedTwice(reqs []loopweb.Request) []string {
	seen := map[string]int{}
	var twice []string
	for _, r := range reqs {
		if r.Path == "/robots.txt" {
			continue
		}
		if seen[r.Host+r.Path]++; seen[r.Host+r.Path] == 2 {
			twice = append(twice, "http://"+r.Host+r.Path)
		}
	}
	return twice
}

// mirrorPairs formats a report's mirrors as "ip/prefix -> ip/prefix", sorted.
func mirrorPairs(ms []report.Mirror) []string {
	var out []string
	for _, m := range ms {
		out = append(out, ipOf(m.Host)+m.Prefix+" -> "+ipOf(m.MirrorOf)+m.OriginalPrefix)
	}
	slices.Sort(out)
	return out
}

// judgeCorpusMirrors sorts reported mirror pairs against corpusMirrors: a
// reported pair is one of them when its two sides lie under that pair's two
// sides, in either direction (which side is the copy depends on which was
// fetched first). It returns the corpus pairs found and missed, and the
// reported pairs that are neither a corpus pair nor the git 2.39 builds.
func judgeCorpusMirrors(reported []string) (found, missed, falsePairs []string) {
	under := func(got, want string) bool {
		g1, g2, _ := strings.Cut(got, " -> ")
		w1, w2, _ := strings.Cut(want, " -> ")
		return (strings.HasPrefix(g1, w1) && strings.HasPrefix(g2, w2)) || (strings.HasPrefix(g1, w2) && strings.HasPrefix(g2, w1))
	}
	hit := map[string]bool{}
	for _, r := range reported {
		ok := under(r, corpusSameBuild)
		for _, w := range corpusMirrors {
			if under(r, w) {
				hit[w], ok = true, true
			}
		}
		if !ok {
			falsePairs = append(falsePairs, r)
		}
	}
	for _, w := range corpusMirrors {
		if hit[w] {
			found = append(found, w)
		} else {
			missed = append(missed, w)
		}
	}
	return found, missed, falsePairs
}

func TestJudgeCorpusMirrors(t *testing.T) {
	reported := []string{
		"127.0.0.2/docs/15/ -> 127.0.0.3/pgsql/15.18/",             // pgsql, the other way round
		"127.0.0.12/linux/man-pages/man1/ -> 127.0.0.11/man/man1/", // man pages, a deeper prefix
		"127.0.0.4/doc/git/ -> 127.0.0.5/v2.39/",                   // the git 2.39 builds: not false
		"127.0.0.5/v2.39/ -> 127.0.0.5/v2.55/",                     // two versions: false
		"127.0.0.12/linux/man-pages/ -> 127.0.0.1/man/",            // another host: false
	}
	found, missed, falsePairs := judgeCorpusMirrors(reported)
	if want := []string{corpusMirrors[0], corpusMirrors[3]}; !slices.Equal(found, want) {
		t.Errorf("found %v, want %v", found, want)
	}
	if want := []string{corpusMirrors[1], corpusMirrors[2]}; !slices.Equal(missed, want) {
		t.Errorf("missed %v, want %v", missed, want)
	}
	if want := reported[3:]; !slices.Equal(falsePairs, want) {
		t.Errorf("false %v, want %v", falsePairs, want)
	}
}
