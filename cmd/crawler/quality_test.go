//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/dedupeval"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Crawl-level quality measures of issue #3, on the real corpus:
//
//   - content lost: pages that a crawl following every link reaches whose
//     content is neither kept by the default crawl nor represented by a kept
//     page with exact Jaccard >= lostJaccard (target: under maxLostFraction),
//     against two such crawls: Horseshoe itself with every link followed and
//     mirror handling off (same scope), and GNU wget -r -np (independent of
//     Horseshoe's URL handling, scope and trap filters; wgetref_test.go);
//   - pairs left: pairs of kept pages with J >= pairJaccard among all pairs of
//     fetched pages with J >= pairJaccard (target: under maxPairsLeftFraction).
//
// Jaccard is exact, over the sets of looped 5-word shingles (dedup.Detector
// .Shingles of parse.Tokenize of the stored visible text).
const (
	lostJaccard          = 0.80
	pairJaccard          = 0.95
	maxLostFraction      = 0.005
	maxPairsLeftFraction = 0.03
	qualityOutEnv        = "HORSESHOE_QUALITY_OUT"
	maxListed            = 10
)

// qualityPage is one fetched HTML page (status 200, > 0 words) of a crawl.
type qualityPage struct {
	id     uint64
	url    string // in the URL space of the default crawl's servers
	via    string // same URL space
	class  storage.Class
	method string
	dupOf  string
	set    []uint64 // sorted, distinct looped-shingle fingerprints
}

// crawlRecords is what one crawl's store says about every URL it dealt with.
type crawlRecords struct {
	pages   []qualityPage        // fetched HTML pages with words
	byURL   map[string]*recordOf // every page and skip record, by URL
	records int                  // page records (fetched or not)
	skipped int                  // mirror_skipped records
	request int                  // requests sent (meta "requests")
	checked int                  // pages whose stored tokens were compared with a re-parse
	differ  []string             // pages whose stored tokens differ from a re-parse of the raw body
}

type recordOf struct {
	class, dupOf, via, method string
	sim                       float64
}

// lostPage is a reference page whose content the default crawl lost.
type lostPage struct {
	URL     string  `json:"url"`
	BestJ   float64 `json:"best_jaccard"`
	BestURL string  `json:"best_kept_url,omitempty"`
	InNP    bool    `json:"inside_seed_prefix"`
	Reason  string  `json:"reason"`
}

type leftPair struct {
	A string  `json:"a"`
	B string  `json:"b"`
	J float64 `json:"jaccard"`
}

// qualityResult is written to $HORSESHOE_QUALITY_OUT for BENCHMARKS.md.
type qualityResult struct {
	Scope                   string         `json:"scope"`
	DefaultRecords          int            `json:"default_page_records"`
	DefaultSkipped          int            `json:"default_mirror_skipped"`
	DefaultFetched          int            `json:"default_html_pages"`
	DefaultKept             int            `json:"default_kept_pages"`
	DefaultRequests         int            `json:"default_requests"`
	ReferenceRecords        int            `json:"reference_page_records"`
	ReferencePages          int            `json:"reference_html_pages"`
	ReferenceInsidePrefix   int            `json:"reference_html_pages_inside_seed_prefixes"`
	ReferenceRequests       int            `json:"reference_requests"`
	ReferenceKeptByURL      int            `json:"reference_pages_kept_by_url"`
	ReferenceRepresented    int            `json:"reference_pages_represented"`
	Lost                    int            `json:"lost"`
	LostFraction            float64        `json:"lost_fraction"`
	LostInsidePrefix        int            `json:"lost_inside_seed_prefixes"`
	LostPages               []lostPage     `json:"lost_pages"`
	LostByCause             map[string]int `json:"lost_by_cause"`
	PairsAt95               int            `json:"pairs_at_0.95_fetched"`
	PairsLeft               int            `json:"pairs_at_0.95_left"`
	PairsLeftFraction       float64        `json:"pairs_left_fraction"`
	LeftPairs               []leftPair     `json:"left_pairs"`
	TokensChecked           int            `json:"tokens_checked"`
	TokenMismatches         int            `json:"token_mismatches"`
	ReferenceCrawlSeconds   float64        `json:"reference_crawl_seconds"`
	AnalysisSeconds         float64        `json:"analysis_seconds"`
	TargetLostFraction      float64        `json:"target_lost_fraction"`
	TargetPairsLeftFraction float64        `json:"target_pairs_left_fraction"`

	// The independent reference: GNU wget -r -np -l inf (wgetref_test.go).
	WgetSavedFiles      int            `json:"wget_saved_files"`
	WgetHTMLPages       int            `json:"wget_html_pages"`            // HTML responses with status 200
	WgetPages           int            `json:"wget_html_pages_with_words"` // the reference pages
	WgetRequests        int            `json:"wget_requests"`
	WgetErrors          map[string]int `json:"wget_errors"` // error lines of wget's log, by message
	WgetKeptByURL       int            `json:"wget_pages_kept_by_url"`
	WgetRepresented     int            `json:"wget_pages_represented"`
	WgetLost            int            `json:"wget_lost"`
	WgetLostFraction    float64        `json:"wget_lost_fraction"`
	WgetLostPages       []lostPage     `json:"wget_lost_pages"`
	WgetLostByCause     map[string]int `json:"wget_lost_by_cause"`
	WgetSeconds         float64        `json:"wget_seconds"`          // wget's run
	WgetAnalysisSeconds float64        `json:"wget_analysis_seconds"` // reading, parsing and measuring what it saved

	// Pages (HTML with words) in one reference and not the other; for the
	// Horseshoe reference only those inside the seed prefixes count.
	WgetPagesNotInReference int `json:"wget_pages_not_in_reference"`
	ReferencePagesNotInWget int `json:"reference_pages_inside_seed_prefixes_not_in_wget"`
}

func TestCorpusQuality(t *testing.T) {
	c := crawlCorpus(t)
	if testing.Short() {
		t.Skip("crawls the real corpus a second time")
	}
	root, _, err := testweb.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	def := configs.Default()
	det, err := dedup.New(crawl.DedupOptions(def.Dedup))
	if err != nil {
		t.Fatal(err)
	}
	// The independent reference, GNU wget's crawl (wgetref_test.go), runs
	// first: its servers run in this process, and they answer faster while
	// the heap holds no shingle index. Without wget it is skipped (a failure
	// under CI), and so is its measure below.
	var wref *crawlRecords
	var wfig wgetFigures
	t.Run("wget", func(t *testing.T) { wref, wfig = wgetReference(t, root, c.manifest, c.web, det) })

	// The reference crawl runs against its own servers over the same tree, so
	// that the request logs of c.web, which other tests check, stay those of
	// the default crawl alone. URLs are mapped back to c.web's ports.
	dir2, web2, toDefault, refElapsed := referenceCrawl(t, root, c.manifest, c.web)

	start := time.Now()
	identity := func(u string) string { return u }
	dflt, err := loadCrawl(c.data, det, identity, nil)
	if err != nil {
		t.Fatalf("default crawl store: %v", err)
	}
	keptURL := map[string]bool{}
	for _, p := range dflt.pages {
		if p.class == storage.ClassUnique {
			keptURL[p.url] = true
		}
	}
	// A reference page kept by URL needs no shingle set.
	ref, err := loadCrawl(dir2, det, toDefault, func(u string) bool { return !keptURL[u] })
	if err != nil {
		t.Fatalf("reference crawl store: %v", err)
	}
	for _, cr := range []*crawlRecords{dflt, ref} {
		if len(cr.differ) > 0 {
			t.Errorf("%d of %d pages: parse.Tokenize(stored text) differs from parse.Parse(raw body).Tokens, e.g. %v",
				len(cr.differ), cr.checked, cr.differ[:min(3, len(cr.differ))])
		}
	}

	res := qualityResult{
		Scope:          def.Crawl.Scope,
		DefaultRecords: dflt.records, DefaultSkipped: dflt.skipped, DefaultFetched: len(dflt.pages),
		DefaultRequests: dflt.request, ReferenceRecords: ref.records, ReferencePages: len(ref.pages),
		ReferenceRequests: ref.request, TokensChecked: dflt.checked + ref.checked,
		TokenMismatches:    len(dflt.differ) + len(ref.differ),
		TargetLostFraction: maxLostFraction, TargetPairsLeftFraction: maxPairsLeftFraction,
		ReferenceCrawlSeconds: refElapsed.Seconds(),
	}
	if c.report.Stats.Requests != dflt.request {
		t.Errorf("default crawl: report counts %d requests, the store %d", c.report.Stats.Requests, dflt.request)
	}
	if n := len(web2.Requests()); n != ref.request {
		t.Errorf("reference crawl: servers saw %d requests, the store counts %d", n, ref.request)
	}
	if len(ref.pages) < len(dflt.pages) {
		t.Errorf("the reference crawl fetched %d HTML pages, fewer than the default crawl's %d", len(ref.pages), len(dflt.pages))
	}

	kept := newKeptSets(dflt)
	res.DefaultKept = len(kept.sets)
	lost := measureLost(c.seeds, kept, ref)
	res.ReferenceInsidePrefix, res.ReferenceKeptByURL, res.ReferenceRepresented = lost.insidePrefix, lost.keptByURL, lost.represented
	res.Lost, res.LostFraction, res.LostInsidePrefix = lost.lost, lost.fraction, lost.lostInside
	res.LostPages, res.LostByCause = lost.lostPages, lost.byCause
	measurePairs(t, &res, dflt)
	res.AnalysisSeconds = time.Since(start).Seconds()

	t.Logf("scope %q for both crawls (wget -np would stay inside the seed prefixes: %d of %d reference pages are inside)",
		res.Scope, res.ReferenceInsidePrefix, res.ReferencePages)
	t.Logf("default crawl: %d page records (+%d mirror-skipped), %d HTML pages with words, %d kept, %d requests",
		res.DefaultRecords, res.DefaultSkipped, res.DefaultFetched, res.DefaultKept, res.DefaultRequests)
	t.Logf("reference crawl (every link, no mirror handling): %d page records, %d HTML pages with words, %d requests, %s",
		res.ReferenceRecords, res.ReferencePages, res.ReferenceRequests, refElapsed.Round(time.Millisecond))
	logLost(t, "the reference crawl", lost)
	t.Logf("pairs with J >= %.2f among fetched pages: %d; left among kept pages: %d (%.2f%%)",
		pairJaccard, res.PairsAt95, res.PairsLeft, 100*res.PairsLeftFraction)
	for _, p := range res.LeftPairs {
		t.Logf("  left %s ~ %s J %.3f", p.A, p.B, p.J)
	}
	t.Logf("tokens checked against a re-parse: %d (%d differ); analysis %.1fs", res.TokensChecked, res.TokenMismatches, res.AnalysisSeconds)

	// The independent reference: the same measure against GNU wget's crawl.
	if wref != nil {
		measureWget(t, c.seeds, kept, ref, wref, wfig, &res)
	}

	if out := os.Getenv(qualityOutEnv); out != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatalf("write %s: %v", out, err)
		}
	}
	if res.PairsLeftFraction >= maxPairsLeftFraction {
		t.Errorf("pairs left: %d of %d pairs with J >= %.2f (%.2f%%), target under %.0f%%",
			res.PairsLeft, res.PairsAt95, pairJaccard, 100*res.PairsLeftFraction, 100*maxPairsLeftFraction)
	}
}

// referenceCrawl crawls the corpus under root following every link, with
// mirror handling off and the default scope (the content-lost measure's
// reference), against servers of its own over the same tree. It returns the
// crawl's data dir, its servers (closed at the test's end), the mapping of
// their URLs to to's and the crawl's wall time.
func referenceCrawl(t *testing.T, root string, manifest []testweb.ManifestEntry, to *loopweb.Web) (string, *loopweb.Web, func(string) string, time.Duration) {
	t.Helper()
	web2, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web2.Close() })
	var seeds2 []string
	for _, m := range manifest {
		seeds2 = append(seeds2, web2.URL(m.Host, m.Prefix))
	}
	cfgPath := filepath.Join(t.TempDir(), "reference.yaml")
	yml := fmt.Sprintf("crawl:\n  scope: %s\n  skip_duplicate_links: false\nmirror:\n  enabled: false\n", configs.Default().Crawl.Scope)
	if err := os.WriteFile(cfgPath, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "reference")
	var so, se bytes.Buffer
	start := time.Now()
	args := append([]string{"crawl", "--config", cfgPath, "--data", dir2, "--delay", "0", "--workers", "8", "--quiet"}, seeds2...)
	if err := run(context.Background(), args, &so, &se); err != nil {
		t.Fatalf("reference crawl: %v\n%s", err, se.String())
	}
	return dir2, web2, urlMapper(web2, to), time.Since(start)
}

// lostFigures is the content-lost measure of the default crawl against one
// reference crawl.
type lostFigures struct {
	pages        int // reference HTML pages with words
	insidePrefix int // of them, inside the seed prefixes
	keptByURL    int
	represented  int
	lost         int
	lostInside   int
	fraction     float64
	lostPages    []lostPage // the first maxListed
	byCause      map[string]int
}

// measureLost measures the content the default crawl lost against ref. A
// reference page is kept when the default crawl kept its URL; otherwise it is
// represented when some kept page has exact J >= lostJaccard. The usual
// witnesses are checked first (a kept page with the identical shingle set; the
// original the default crawl named for the URL, as a duplicate or as a mirror
// copy); the remaining pages get their exact best J over an inverted index of
// every kept set.
func measureLost(seeds []string, kept *keptSets, ref *crawlRecords) lostFigures {
	res := lostFigures{pages: len(ref.pages)}
	for i := range ref.pages {
		p := &ref.pages[i]
		in := insidePrefix(p.url, seeds)
		if in {
			res.insidePrefix++
		}
		if _, ok := kept.at[p.url]; ok {
			res.keptByURL++
			continue
		}
		if kept.representedByWitness(p) {
			res.represented++
			continue
		}
		bj, bk := kept.best(p.set)
		if bj >= lostJaccard {
			res.represented++
			continue
		}
		res.lost++
		if in {
			res.lostInside++
		}
		cause, reason := lossReason(p, kept.dflt, ref)
		if res.byCause == nil {
			res.byCause = map[string]int{}
		}
		res.byCause[cause]++
		if len(res.lostPages) < maxListed {
			lp := lostPage{URL: p.url, BestJ: bj, InNP: in, Reason: reason}
			if bk >= 0 {
				lp.BestURL = kept.urls[bk]
			}
			res.lostPages = append(res.lostPages, lp)
		}
	}
	if len(ref.pages) > 0 {
		res.fraction = float64(res.lost) / float64(len(ref.pages))
	}
	return res
}

// logLost logs the content-lost figures against one reference: the counts,
// the losses grouped by cause and the first lost pages.
func logLost(t *testing.T, reference string, f lostFigures) {
	t.Helper()
	t.Logf("content lost against %s: %d of %d pages (%.3f%%; %d inside seed prefixes); %d kept by URL, %d represented with J >= %.2f",
		reference, f.lost, f.pages, 100*f.fraction, f.lostInside, f.keptByURL, f.represented, lostJaccard)
	for _, cause := range slices.Sorted(maps.Keys(f.byCause)) {
		t.Logf("  %d lost: %s", f.byCause[cause], cause)
	}
	for _, l := range f.lostPages {
		t.Logf("  lost %s best J %.3f (%s): %s", l.URL, l.BestJ, l.BestURL, l.Reason)
	}
	if f.fraction >= maxLostFraction {
		t.Errorf("content lost against %s: %d of %d pages (%.3f%%), target under %.1f%%",
			reference, f.lost, f.pages, 100*f.fraction, 100*maxLostFraction)
	}
}

// keptSets are the shingle sets of the pages the default crawl kept, with
// the look-ups measureLost needs; one serves every reference.
type keptSets struct {
	dflt  *crawlRecords
	sets  [][]uint64
	urls  []string
	at    map[string]int     // URL -> index into sets
	bySet map[uint64][]int   // set digest -> indexes into sets
	index map[uint64][]int32 // shingle -> indexes into sets; built on first use
}

func newKeptSets(dflt *crawlRecords) *keptSets {
	k := &keptSets{dflt: dflt, at: map[string]int{}, bySet: map[uint64][]int{}}
	for i := range dflt.pages {
		p := &dflt.pages[i]
		if p.class != storage.ClassUnique {
			continue
		}
		d := setDigest(p.set)
		k.at[p.url] = len(k.sets)
		k.bySet[d] = append(k.bySet[d], len(k.sets))
		k.sets = append(k.sets, p.set)
		k.urls = append(k.urls, p.url)
	}
	return k
}

// best returns the highest exact Jaccard of q against the kept sets and the
// index of that set (-1 when q shares no shingle with any).
func (k *keptSets) best(q []uint64) (float64, int) {
	if k.index == nil {
		k.index = map[uint64][]int32{}
		for i, s := range k.sets {
			for _, v := range s {
				k.index[v] = append(k.index[v], int32(i))
			}
		}
	}
	return bestKept(q, k.sets, k.index)
}

// representedByWitness reports whether a kept page with the same shingle
// set as p, or the original the default crawl named for p's URL (following
// a chain of mirror skips), has J >= lostJaccard with p.
func (k *keptSets) representedByWitness(p *qualityPage) bool {
	for _, i := range k.bySet[setDigest(p.set)] {
		if slices.Equal(k.sets[i], p.set) {
			return true
		}
	}
	u := p.url
	for hops := 0; hops < 8; hops++ {
		r, ok := k.dflt.byURL[u]
		if !ok || r.dupOf == "" {
			return false
		}
		u = r.dupOf
		if i, ok := k.at[u]; ok {
			return dedupeval.Jaccard(p.set, k.sets[i]) >= lostJaccard
		}
	}
	return false
}

// setDigest is an order-dependent digest of a sorted set, to find identical sets.
func setDigest(s []uint64) uint64 {
	h := uint64(len(s)) * 0x9e3779b97f4a7c15
	for _, v := range s {
		h = (h ^ v) * 0x100000001b3
	}
	return h
}

// measurePairs fills the pairs-left fields of res. Identical shingle sets
// are collapsed before the exact all-pairs search and expanded after it: a
// group of n identical pages holds n(n-1)/2 pairs with J = 1, and two groups
// with J >= pairJaccard hold the product of their sizes.
func measurePairs(t *testing.T, res *qualityResult, dflt *crawlRecords) {
	t.Helper()
	type group struct {
		members []int // indexes into dflt.pages
		kept    int   // members of class unique
	}
	var groups []group
	var sets [][]uint64
	bySet := map[uint64][]int{} // digest -> indexes into groups
	for i := range dflt.pages {
		p := &dflt.pages[i]
		d := setDigest(p.set)
		g := -1
		for _, k := range bySet[d] {
			if slices.Equal(sets[k], p.set) {
				g = k
				break
			}
		}
		if g < 0 {
			g = len(groups)
			groups = append(groups, group{})
			sets = append(sets, p.set)
			bySet[d] = append(bySet[d], g)
		}
		groups[g].members = append(groups[g].members, i)
		if p.class == storage.ClassUnique {
			groups[g].kept++
		}
	}
	listLeft := func(a, b group, j float64, same bool) {
		for x, i := range a.members {
			for y, k := range b.members {
				if len(res.LeftPairs) >= maxListed {
					return
				}
				if same && y <= x {
					continue
				}
				pa, pb := &dflt.pages[i], &dflt.pages[k]
				if pa.class == storage.ClassUnique && pb.class == storage.ClassUnique {
					res.LeftPairs = append(res.LeftPairs, leftPair{A: pa.url, B: pb.url, J: j})
				}
			}
		}
	}
	for _, g := range groups {
		n := len(g.members)
		res.PairsAt95 += n * (n - 1) / 2
		res.PairsLeft += g.kept * (g.kept - 1) / 2
		if g.kept > 1 {
			listLeft(g, g, 1, true)
		}
	}
	for _, pr := range dedupeval.SimilarPairs(sets, pairJaccard) {
		a, b := groups[pr.A], groups[pr.B]
		res.PairsAt95 += len(a.members) * len(b.members)
		res.PairsLeft += a.kept * b.kept
		if a.kept > 0 && b.kept > 0 {
			listLeft(a, b, pr.J, false)
		}
	}
	if res.PairsAt95 > 0 {
		res.PairsLeftFraction = float64(res.PairsLeft) / float64(res.PairsAt95)
	}
}

// bestKept returns the highest exact Jaccard of q against kept and the index
// of that kept set (-1 when q shares no shingle with any).
func bestKept(q []uint64, kept [][]uint64, index map[uint64][]int32) (float64, int) {
	shared := map[int32]int{}
	for _, v := range q {
		for _, i := range index[v] {
			shared[i]++
		}
	}
	bj, bi := 0.0, -1
	for i, n := range shared {
		j := float64(n) / float64(len(q)+len(kept[i])-n)
		if j > bj || (j == bj && int(i) < bi) {
			bj, bi = j, int(i)
		}
	}
	return bj, bi
}

// lossReason explains what the default crawl did with a lost page: fetched
// it and dropped it as a duplicate, skipped it as a mirror copy, or never
// reached it, in which case the first ancestor (on the reference crawl's
// discovery path) that the default crawl knows is named with its fate.
//
// cause names the decisive record: its class and URL.
func lossReason(p *qualityPage, dflt, ref *crawlRecords) (cause, reason string) {
	if r, ok := dflt.byURL[p.url]; ok {
		return r.class + " " + p.url,
			fmt.Sprintf("default crawl: %s of %s (method %s, estimate %.3f; that URL: %s)", r.class, r.dupOf, r.method, r.sim, fate(dflt, r.dupOf))
	}
	path := []string{p.url}
	for u, hops := p.via, 0; u != "" && hops < 64; hops++ {
		if r, ok := dflt.byURL[u]; ok {
			what := r.class
			if r.dupOf != "" {
				what += fmt.Sprintf(" of %s (method %s, estimate %.3f; that URL: %s)", r.dupOf, r.method, r.sim, fate(dflt, r.dupOf))
			}
			return "links of " + r.class + " " + u,
				fmt.Sprintf("not reached by the default crawl; reference path %s <- %s, which the default crawl recorded as %s",
					strings.Join(path, " <- "), u, what)
		}
		path = append(path, u)
		rr, ok := ref.byURL[u]
		if !ok {
			break
		}
		u = rr.via
	}
	return "not reached", "not reached by the default crawl; reference path " + strings.Join(path, " <- ")
}

// fate is the class the default crawl recorded for u (and what it named as
// u's original, if anything).
func fate(dflt *crawlRecords, u string) string {
	r, ok := dflt.byURL[u]
	switch {
	case !ok:
		return "no record"
	case r.dupOf != "":
		return r.class + " of " + r.dupOf
	}
	return r.class
}

// insidePrefix reports whether u lies under one of the seed URLs, as
// wget -r -np would require.
func insidePrefix(u string, seeds []string) bool {
	for _, s := range seeds {
		dir := s[:strings.LastIndex(s, "/")+1]
		if strings.HasPrefix(u, dir) {
			return true
		}
	}
	return false
}

// urlMapper returns a function rewriting URLs of from's hosts (or every
// host:port of them in a text, a report's JSON) to the same paths on to's
// hosts (same IP, other port). from may be closed.
func urlMapper(from, to *loopweb.Web) func(string) string {
	hostPorts := map[string]string{}
	for _, ip := range from.Hosts() {
		hostPorts[strings.TrimPrefix(from.BaseURL(ip), "http://")] = strings.TrimPrefix(to.BaseURL(ip), "http://")
	}
	return func(s string) string {
		return loopbackHostPort.ReplaceAllStringFunc(s, func(hp string) string {
			if x, ok := hostPorts[hp]; ok {
				return x
			}
			return hp
		})
	}
}

// loopbackHostPort matches a loopback host:port in a URL or in a report's
// JSON.
var loopbackHostPort = regexp.MustCompile(`127\.0\.0\.[0-9]+:[0-9]+`)

// loadCrawl reads a closed crawl store: every record, and the shingle set of
// every fetched HTML page with words (only of those whose URL needSet accepts,
// when needSet is not nil). Every tokenCheckEvery-th such page with
// a raw response is re-parsed to check that parse.Tokenize of the stored
// visible text is the token stream the crawl signed.
func loadCrawl(dir string, det *dedup.Detector, mapURL func(string) string, needSet func(string) bool) (*crawlRecords, error) {
	const tokenCheckEvery = 20
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cr := &crawlRecords{byURL: map[string]*recordOf{}}
	if b, err := db.GetMeta(storage.MetaRequests); err == nil {
		if _, err := fmt.Sscan(string(b), &cr.request); err != nil {
			return nil, fmt.Errorf("meta requests %q: %w", b, err)
		}
	}
	var tokens []string
	var shingles []uint64
	err = db.ForEachPage(func(p *storage.Page) error {
		cr.records++
		u := mapURL(p.URL)
		cr.byURL[u] = &recordOf{class: string(p.Class), dupOf: mapURL(p.DuplicateOf), via: mapURL(p.Via), method: p.Method, sim: p.Similarity}
		if p.Status != http.StatusOK || p.Words == 0 {
			return nil
		}
		switch p.Class {
		case storage.ClassUnique, storage.ClassExact, storage.ClassNear:
		default:
			return nil
		}
		n := len(cr.pages)
		cr.pages = append(cr.pages, qualityPage{
			id: p.ID, url: u, via: mapURL(p.Via), class: p.Class, method: p.Method, dupOf: mapURL(p.DuplicateOf),
		})
		check := p.HasRaw && n%tokenCheckEvery == 0
		if needSet != nil && !needSet(u) && !check {
			return nil
		}
		text, err := db.Text(p.ID)
		if err != nil {
			return fmt.Errorf("text of %s: %w", p.URL, err)
		}
		tokens = parse.Tokenize(tokens[:0], text)
		if len(tokens) != p.Words {
			cr.differ = append(cr.differ, fmt.Sprintf("%s: %d tokens from the text, %d words recorded", p.URL, len(tokens), p.Words))
		}
		if check {
			cr.checked++
			same, err := reparseMatches(db, p, tokens)
			if err != nil {
				return err
			}
			if !same {
				cr.differ = append(cr.differ, p.URL)
			}
		}
		if needSet != nil && !needSet(u) {
			return nil
		}
		cr.pages[n].set, shingles = shingleSet(det, tokens, shingles)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	err = db.ForEachSkipped(func(p *storage.Page) error {
		cr.skipped++
		u := mapURL(p.URL)
		if _, ok := cr.byURL[u]; !ok {
			cr.byURL[u] = &recordOf{class: string(p.Class), dupOf: mapURL(p.DuplicateOf), via: mapURL(p.Via), method: p.Method, sim: p.Similarity}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("skipped: %w", err)
	}
	return cr, nil
}

// shingleSet returns the sorted, distinct looped-shingle fingerprints of
// tokens; buf is scratch space, returned for reuse.
func shingleSet(det *dedup.Detector, tokens []string, buf []uint64) (set, _ []uint64) {
	buf = det.Shingles(tokens, buf[:0])
	set = slices.Clone(buf)
	slices.Sort(set)
	return slices.Clip(slices.Compact(set)), buf
}

// reparseMatches parses the stored raw response of p as the crawl did and
// reports whether its token stream equals tokens.
func reparseMatches(db *storage.DB, p *storage.Page, tokens []string) (bool, error) {
	_, raw, err := db.Raw(p.ID)
	if err != nil {
		return false, fmt.Errorf("raw of %s: %w", p.URL, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		return false, fmt.Errorf("raw response of %s: %w", p.URL, err)
	}
	// The crawl parsed the body converted to UTF-8 by fetch.ToUTF8; convert
	// it the same way (BOM, Content-Type charset, <meta>, then sniffing).
	rawBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, fmt.Errorf("raw body of %s: %w", p.URL, err)
	}
	base := p.URL
	if p.FinalURL != "" {
		base = p.FinalURL
	}
	doc, err := parseLikeCrawl(rawBody, resp.Header.Get("Content-Type"), base)
	if err != nil {
		return false, fmt.Errorf("%s: %w", p.URL, err)
	}
	return slices.Equal(doc.Tokens, tokens), nil
}

// parseLikeCrawl parses an HTML response body fetched from pageURL (the URL
// after redirects) as the crawl does: converted to UTF-8 by fetch.ToUTF8
// (BOM, Content-Type charset, <meta>, then sniffing), then parse.Parse with
// the default configuration's parse options.
func parseLikeCrawl(rawBody []byte, contentType, pageURL string) (*parse.Document, error) {
	body, _ := fetch.ToUTF8(rawBody, contentType)
	bu, err := url.Parse(pageURL)
	if err != nil {
		return nil, fmt.Errorf("page URL %s: %w", pageURL, err)
	}
	def := configs.Default()
	doc, err := parse.Parse(body, bu, parse.Options{URLTokens: def.Dedup.URLTokens, TitleTokens: def.Dedup.TitleTokens, BotName: def.Fetch.RobotsAgent, MaxTokens: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", pageURL, err)
	}
	return doc, nil
}
