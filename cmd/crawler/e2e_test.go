//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// corpusRun is one crawl of the real corpus, shared by the tests that check it.
type corpusRun struct {
	web      *loopweb.Web
	manifest []testweb.ManifestEntry
	seeds    []string
	data     string
	report   report.Data
	elapsed  time.Duration
	err      error
}

var (
	corpusOnce sync.Once
	corpus     *corpusRun
)

// crawlCorpus serves the real corpus (../shared/corpus) on its loopback
// addresses, one server per address, and crawls every prefix of its MANIFEST
// with delay 0, once per test binary.
func crawlCorpus(t *testing.T) *corpusRun {
	t.Helper()
	corpusOnce.Do(func() {
		corpus = &corpusRun{}
		root, manifest, err := testweb.Corpus()
		if err != nil {
			corpus.err = err
			return
		}
		corpus.manifest = manifest
		web, err := loopweb.Start(root, loopweb.Options{})
		if err != nil {
			corpus.err = err
			return
		}
		corpus.web = web
		for _, m := range manifest {
			corpus.seeds = append(corpus.seeds, web.URL(m.Host, m.Prefix))
		}
		dir, err := os.MkdirTemp("", "horseshoe-e2e-")
		if err != nil {
			corpus.err = err
			return
		}
		corpus.data = filepath.Join(dir, "data")
		args := append([]string{"crawl", "--data", corpus.data, "--delay", "0", "--workers", "8", "--quiet"}, corpus.seeds...)
		var out, errOut bytes.Buffer
		start := time.Now()
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			corpus.err = fmt.Errorf("crawl: %v\n%s", err, errOut.String())
			return
		}
		corpus.elapsed = time.Since(start)
		jsonPath := filepath.Join(dir, "report.json")
		if err := run(context.Background(), []string{"report", "--data", corpus.data, "--format", "json", "--out", jsonPath}, &out, &errOut); err != nil {
			corpus.err = fmt.Errorf("report: %v\n%s", err, errOut.String())
			return
		}
		b, err := os.ReadFile(jsonPath)
		if err != nil {
			corpus.err = err
			return
		}
		corpus.err = json.Unmarshal(b, &corpus.report)
	})
	testweb.RequireCorpus(t, corpus.err)
	return corpus
}

// corpusRoot returns the unpacked real corpus. Without it a test is skipped,
// except under CI, where the real-corpus tests must run.
func corpusRoot(t *testing.T) string {
	t.Helper()
	root, _ := testweb.NeedCorpus(t)
	return root
}

func TestMain(m *testing.M) {
	code := m.Run()
	removeBins()
	if corpus != nil {
		if corpus.web != nil {
			corpus.web.Close()
		}
		if corpus.data != "" {
			os.RemoveAll(filepath.Dir(corpus.data))
		}
	}
	os.Exit(code)
}

func TestCorpusEveryseedFetchedAndNoURLTwice(t *testing.T) {
	c := crawlCorpus(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("corpus crawl: %d pages, %d requests, %s, classes %v, Go heap sys %d MiB",
		c.report.Stats.Pages, c.report.Stats.Requests, c.elapsed.Round(time.Millisecond), c.report.Stats.ByClass, ms.Sys>>20)
	pages := pagesByURL(&c.report)
	for _, s := range c.seeds {
		p, ok := pages[s]
		if !ok || p.Status != 200 {
			t.Errorf("seed %s not fetched: %+v", s, p)
		}
	}
	count := map[string]int{}
	for _, r := range c.web.Requests() {
		count[r.Host+" "+r.Method+" "+r.Path]++
	}
	for k, n := range count {
		if n > 1 {
			t.Errorf("%s requested %d times", k, n)
		}
	}
	if len(count) != c.report.Stats.Requests {
		t.Errorf("servers saw %d distinct requests, the report counts %d", len(count), c.report.Stats.Requests)
	}
}

func TestCorpusClasses(t *testing.T) {
	c := crawlCorpus(t)
	var refUnique, refOther, apacheExact int
	for _, p := range c.report.Pages {
		if p.Host == "" {
			continue
		}
		ip := strings.Split(p.Host, ":")[0]
		switch {
		case ip == "127.0.0.15" && p.Status == 200:
			if p.Class == "unique" {
				refUnique++
			} else {
				refOther++
				t.Errorf("127.0.0.15 page %s classed %s (dup of %s, sim %.3f)", p.URL, p.Class, p.DuplicateOf, p.Similarity)
			}
		case ip == "127.0.0.7" && p.Class == "exact_duplicate":
			apacheExact++
		}
	}
	if refUnique < 15 {
		t.Errorf("127.0.0.15: %d unique pages, want all 15 (plus its listing)", refUnique)
	}
	if apacheExact < 100 {
		t.Errorf("127.0.0.7: %d exact duplicates, want at least 100", apacheExact)
	}
}

// The four mirror pairs of the corpus README: whichever host's seed was
// fetched second is a copy of the other's (or its host is reported as a
// mirror), and the copy costs only a handful of wasted requests: fetches of
// paths whose counterpart on the original was fetched too. Fetches of paths
// the original lacks are not waste: they are how no content is lost.
func TestCorpusMirrorPairs(t *testing.T) {
	c := crawlCorpus(t)
	pages := pagesByURL(&c.report)
	pairs := []struct{ a, aPrefix, b, bPrefix string }{
		{"127.0.0.2", "/docs/15/", "127.0.0.3", "/pgsql/15.18/"},
		{"127.0.0.5", "/v2.55/", "127.0.0.6", "/latest/"},
		{"127.0.0.8", "/", "127.0.0.9", "/"},
		{"127.0.0.11", "/man/", "127.0.0.12", "/linux/man-pages/"},
	}
	for _, pr := range pairs {
		sa, sb := c.web.URL(pr.a, pr.aPrefix), c.web.URL(pr.b, pr.bPrefix)
		pa, pb := pages[sa], pages[sb]
		type side struct{ ip, prefix, seed string }
		first, second := side{pr.a, pr.aPrefix, sa}, side{pr.b, pr.bPrefix, sb}
		// The copy is the side reported as the mirror (the side that
		// lacks more, docs/MIRRORS.md), else the side whose seed was a
		// duplicate of the other's.
		switch {
		case mirrorReported(&c.report, pr.a):
			first, second = second, first
		case mirrorReported(&c.report, pr.b):
		case isDup(pb) && pb.DuplicateOf == sa:
		case isDup(pa) && pa.DuplicateOf == sb:
			first, second = second, first
		default:
			t.Errorf("%s vs %s: neither seed is a duplicate of the other (%s, %s) and no host is reported as a mirror; candidates:\n%s",
				sa, sb, pa.Class, pb.Class, candidatesOf(t, c.data, pr.a, pr.b))
			continue
		}
		sp := pages[second.seed]
		wasted, total, picks := 0, 0, 0
		for _, r := range c.web.RequestsTo(second.ip) {
			total++
			if !strings.HasPrefix(r.Path, second.prefix) || r.Path == second.prefix {
				continue
			}
			cp := c.web.URL(first.ip, first.prefix+strings.TrimPrefix(r.Path, second.prefix))
			if o, ok := pages[cp]; ok && o.Status == 200 {
				if linkMonitorPick(c.web.URL(second.ip, r.Path), cp) {
					picks++
					continue
				}
				wasted++
			}
		}
		// Beyond a handful, only the verification stream (1 in 20 of the URLs
		// a mirror decision skips, fetched on purpose) may repeat pages.
		// Deliberate probes are allowed beyond the handful: the
		// verification stream, and gap probes that found nothing new.
		verified, halted := mirrorProbes(c.report.Mirrors, second.ip, second.prefix)
		t.Logf("%s is the copy: seed %s dup_of=%s sim=%.3f method=%s; %d requests to it, %d for paths the original served (%d verification), %d link-monitor picks besides",
			second.ip, sp.Class, sp.DuplicateOf, sp.Similarity, sp.Method, total, wasted, verified, picks)
		if fp := pages[first.seed]; isDup(fp) && fp.DuplicateOf == second.seed {
			// The copy was met first: its pages fetched before its
			// original's lacks made it the mirror were fetched as the
			// original's. Measured, not bounded.
			continue
		}
		if halted {
			// The loss monitor found the copy's verified pages differing
			// beyond the loss rate and stopped skipping: from then on the
			// copy is fetched whole, by design. Which pages the stream
			// meets first is fetch order. Measured, not bounded.
			t.Logf("%s: skipping halted by the loss monitor; %d requests for pages its original served", second.ip, wasted)
			continue
		}
		if wasted > 25+verified {
			t.Errorf("%s: %d requests for pages its original already served (%d verification); a mirror should cost only a handful; candidates:\n%s",
				second.ip, wasted, verified, candidatesOf(t, c.data, first.ip, second.ip))
		}
	}
	for _, m := range c.report.Mirrors {
		t.Logf("mirror: %s%s -> %s%s compared %d matched %d saved %d", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix,
			m.PathsCompared, m.PathsMatched, m.RequestsSaved)
	}
	for _, m := range c.report.ReplicatedPrefixes {
		t.Logf("replicated prefix: %s%s -> %s%s compared %d matched %d", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix,
			m.PathsCompared, m.PathsMatched)
	}
}

func isDup(p report.Page) bool { return p.Class == "exact_duplicate" || p.Class == "near_duplicate" }

func mirrorReported(d *report.Data, ip string) bool {
	for _, m := range d.Mirrors {
		if strings.Split(m.Host, ":")[0] == ip {
			return true
		}
	}
	return false
}

// primaryTag is the primary subtag of a language tag, lower-cased.
func primaryTag(tag string) string {
	tag, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
	return tag
}

func TestCorpusJSONLExport(t *testing.T) {
	c := crawlCorpus(t)
	out := filepath.Join(t.TempDir(), "pages.jsonl")
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"export", "--data", c.data, "--format", "jsonl", "--out", out}, &so, &se); err != nil {
		t.Fatalf("export: %v %s", err, se.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	lines := 0
	urls := map[string]bool{}
	textLang := map[string]int{}
	declared, agree, long := 0, 0, 0
	for sc.Scan() {
		var r struct {
			URL, Title, Text string
			Status           int
			Language         string  `json:"language"`
			LanguageSource   string  `json:"language_source"`
			LanguageConf     float64 `json:"language_confidence"`
			LanguageDeclared string  `json:"language_declared"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		if r.URL == "" || r.Status != 200 || urls[r.URL] {
			t.Errorf("bad or repeated record %q status %d", r.URL, r.Status)
		}
		urls[r.URL] = true
		lines++
		// Language: from the text where reliable, else <html lang>.
		switch r.LanguageSource {
		case "text":
			textLang[r.Language]++
			if r.LanguageConf <= 0 || r.LanguageConf > 1 {
				t.Errorf("%s: language confidence %v", r.URL, r.LanguageConf)
			}
			if d := primaryTag(r.LanguageDeclared); d != "" {
				declared++
				if d == r.Language {
					agree++
				}
			}
		case "html":
			if r.Language != primaryTag(r.LanguageDeclared) || r.Language == "" {
				t.Errorf("%s: language %q from html, declared %q", r.URL, r.Language, r.LanguageDeclared)
			}
		case "":
			if r.Language != "" {
				t.Errorf("%s: language %q without a source", r.URL, r.Language)
			}
			if len(r.Text) > 2000 {
				long++
			}
		default:
			t.Errorf("%s: language source %q", r.URL, r.LanguageSource)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The corpus is mostly English documentation, with Apache manual
	// translations (French, Japanese, Korean, Turkish, Portuguese, Chinese,
	// ...; the Korean ones in EUC-KR, served as "charset=utf-8" by Go's file
	// server) and a few other languages.
	detected := 0
	for _, n := range textLang {
		detected += n
	}
	t.Logf("languages from text: %v; %d of %d agree with <html lang>; %d long pages without one", textLang, agree, declared, long)
	if detected < lines*8/10 {
		t.Errorf("language identified from the text of %d of %d pages, want 80%%", detected, lines)
	}
	if declared == 0 || agree < declared*95/100 {
		t.Errorf("text language agrees with <html lang> on %d of %d pages, want 95%%", agree, declared)
	}
	for _, l := range []string{"en", "fr", "ja", "ko", "zh", "tr", "pt"} {
		if textLang[l] == 0 {
			t.Errorf("no page identified as %q (%v)", l, textLang)
		}
	}
	if long > lines/50 {
		t.Errorf("%d pages with over 2,000 bytes of text have no language", long)
	}
	if want := c.report.Stats.ByClass["unique"]; lines != want {
		t.Errorf("JSONL has %d lines, the report counts %d unique pages", lines, want)
	}
}

// mirrorProbes returns the deliberate probes of the mirror at ip and prefix
// in mirrors (its verification stream, samples, and gap probes that found
// nothing new), and whether the loss monitor halted its skipping.
func mirrorProbes(mirrors []report.Mirror, ip, prefix string) (verified int, halted bool) {
	for _, m := range mirrors {
		if ipOf(m.Host) == ip && m.Prefix == prefix {
			verified, halted = m.Verified+m.Samples+m.GapProbes-m.GapHits, m.Halted
		}
	}
	return verified, halted
}

// linkMonitorPick reports whether the near-duplicate link monitor may fetch
// copyURL on purpose, as the sample that checks its counterpart origURL
// (mirror.link_sample at the defaults' seed: mirror.PickPair). Such picks are
// set apart from a mirror's wasted requests: their share is the monitor's
// price (TestNearLinkMonitor), and whether one is met before the mirror's
// decision is a matter of fetch order.
func linkMonitorPick(copyURL, origURL string) bool {
	lo := mirror.DefaultLinkOptions()
	return mirror.PickPair(lo.Seed, lo.Rate(), copyURL, origURL)
}
