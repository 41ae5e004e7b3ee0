//go:build e2e

package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
)

// readabilityScript runs Mozilla's Readability 0.6.0 on jsdom: it reads
// JSON lines {file, url} on stdin and prints JSON lines {file, text,
// spaced, ms}: text is the article's textContent, or null when Readability
// finds no article; spaced is the same article's text nodes joined by
// spaces. textContent runs the texts of neighbouring blocks and table cells
// together ("IndexesPrev", "240160A0" for the cells 240, 160, A0), where
// our main text, rendered as a browser renders text, separates them.
const readabilityScript = `
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
const require = createRequire(process.argv[2] + "/");
const { JSDOM, VirtualConsole } = require("jsdom");
const { Readability } = require("@mozilla/readability");
const quiet = new VirtualConsole(); // jsdom's complaints about the pages' CSS
for await (const line of createInterface({ input: process.stdin })) {
  const { file, url } = JSON.parse(line);
  const start = performance.now();
  const dom = new JSDOM(readFileSync(file, "utf8"), { url, virtualConsole: quiet });
  const article = new Readability(dom.window.document, { serializer: (el) => el }).parse();
  const ms = performance.now() - start;
  let spaced = null;
  if (article) {
    const parts = [];
    const walk = dom.window.document.createTreeWalker(article.content, 4 /* NodeFilter.SHOW_TEXT */);
    while (walk.nextNode()) parts.push(walk.currentNode.data);
    spaced = parts.join(" ");
  }
  console.log(JSON.stringify({ file, text: article ? article.textContent : null, spaced, ms }));
  dom.window.close();
}
`

// corpusPage is one page of the real corpus and what the two extractors
// made of it.
type corpusPage struct {
	site, url, file string // file: the page decoded to UTF-8, as both extractors read it
	ours            string
	oursErr         error
	oursTime        time.Duration
	theirs          *string // nil: Readability found no article
	theirsSpaced    string  // the article's text nodes joined by spaces
	theirsMS        float64
}

// TestMainTextAgainstMozilla compares MainText with Mozilla's Readability
// (npm @mozilla/readability 0.6.0 on jsdom) on pages of the real corpus:
// the token-level F1 of the two texts is at least 0.9 on the median page
// where Readability finds an article. Pages where it finds none are
// counted apart (and ours should find none there either). Both read the
// same UTF-8 page: the corpus file decoded by fetch.ToUTF8 with the
// Content-Type the test servers send.
//
// It takes up to 20 pages a site, spread over the site's sorted files;
// HORSESHOE_MAINTEXT_ALL=1 takes every page (minutes: BENCHMARKS.md).
func TestMainTextAgainstMozilla(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs node on hundreds of pages")
	}
	modules := testtools.Readability(t)
	root, _ := testweb.NeedCorpus(t)
	perSite := 20
	if os.Getenv("HORSESHOE_MAINTEXT_ALL") != "" {
		perSite = 0
	}
	pages := corpusPages(t, root, perSite)
	tmp := t.TempDir()
	var input strings.Builder
	for i := range pages {
		p := &pages[i]
		raw, err := os.ReadFile(p.file)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := fetch.ToUTF8(raw, "text/html; charset=utf-8")
		p.file = filepath.Join(tmp, fmt.Sprintf("%d.html", i))
		if err := os.WriteFile(p.file, page, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.ours, p.oursErr = MainText(page, p.url)
		p.oursTime = time.Since(start)
		line, _ := json.Marshal(map[string]string{"file": p.file, "url": p.url})
		input.Write(line)
		input.WriteByte('\n')
	}
	theirs := runReadability(t, modules, tmp, input.String())
	for i := range pages {
		r, ok := theirs[pages[i].file]
		if !ok {
			t.Fatalf("Readability gave nothing for %s", pages[i].url)
		}
		pages[i].theirs, pages[i].theirsSpaced, pages[i].theirsMS = r.Text, r.Spaced, r.MS
	}
	all := reportAgreement(t, pages)
	if med := median(all); med < 0.9 {
		t.Errorf("median token F1 with Mozilla's Readability is %.3f, want at least 0.9", med)
	}
}

// corpusPages lists the corpus's HTML pages by site (its host address),
// regular files only (its symbolic links are exact copies), sorted, and
// takes up to perSite of each site (0: all) at even steps.
func corpusPages(t *testing.T, root string, perSite int) []corpusPage {
	t.Helper()
	sites, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var pages []corpusPage
	for _, s := range sites {
		var files []string
		err := filepath.WalkDir(filepath.Join(root, s.Name()), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.HasSuffix(path, ".html") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(files)
		step := 1
		if perSite > 0 && len(files) > perSite {
			step = len(files) / perSite
		}
		for i := 0; i < len(files) && (perSite == 0 || i/step < perSite); i += step {
			rel, _ := filepath.Rel(root, files[i])
			pages = append(pages, corpusPage{site: s.Name(), url: "http://" + filepath.ToSlash(rel), file: files[i]})
		}
	}
	return pages
}

type readabilityResult struct {
	Text   *string `json:"text"`
	Spaced string  `json:"spaced"`
	MS     float64 `json:"ms"`
}

// runReadability runs readabilityScript on the pages of input.
func runReadability(t *testing.T, modules, dir, input string) map[string]readabilityResult {
	t.Helper()
	script := filepath.Join(dir, "readability.mjs")
	if err := os.WriteFile(script, []byte(readabilityScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, modules)
	cmd.Stdin = strings.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := map[string]readabilityResult{}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var r struct {
			File string `json:"file"`
			readabilityResult
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("Readability's output: %v", err)
		}
		results[r.File] = r.readabilityResult
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return results
}

// reportAgreement logs, per site and for all pages, the median and lowest
// token F1 on pages where Readability finds an article, the pages where it
// finds none (and how many of them we give no text either), and the median
// time of each extractor, and returns the F1 of every page with an article.
func reportAgreement(t *testing.T, pages []corpusPage) []float64 {
	type siteStats struct {
		f1, spaced          []float64
		worst               string
		noArticle, bothNone int
		failed              int
		oursTime, theirsMS  []float64
	}
	stats := map[string]*siteStats{}
	var all, allSpaced []float64
	for _, p := range pages {
		s := stats[p.site]
		if s == nil {
			s = &siteStats{}
			stats[p.site] = s
		}
		s.oursTime = append(s.oursTime, float64(p.oursTime.Microseconds())/1000)
		s.theirsMS = append(s.theirsMS, p.theirsMS)
		if p.oursErr != nil {
			s.failed++
			t.Logf("%s: %v", p.url, p.oursErr)
		}
		if p.theirs == nil {
			s.noArticle++
			if p.ours == "" {
				s.bothNone++
			}
			continue
		}
		f := tokenF1(p.ours, *p.theirs)
		if len(s.f1) == 0 || f < slices.Min(s.f1) {
			s.worst = p.url
		}
		s.f1 = append(s.f1, f)
		s.spaced = append(s.spaced, tokenF1(p.ours, p.theirsSpaced))
		all = append(all, f)
		allSpaced = append(allSpaced, s.spaced[len(s.spaced)-1])
	}
	sites := make([]string, 0, len(stats))
	for s := range stats {
		sites = append(sites, s)
	}
	sort.Strings(sites)
	for _, site := range sites {
		s := stats[site]
		line := fmt.Sprintf("%-11s %4d pages: ", site, len(s.f1)+s.noArticle)
		if len(s.f1) > 0 {
			line += fmt.Sprintf("F1 median %.3f, lowest %.3f (%s); with text nodes spaced median %.3f, lowest %.3f",
				median(s.f1), slices.Min(s.f1), s.worst, median(s.spaced), slices.Min(s.spaced))
		}
		line += fmt.Sprintf("; no article %d (ours none on %d); refused %d; ms median ours %.1f, Mozilla+jsdom %.1f",
			s.noArticle, s.bothNone, s.failed, median(s.oursTime), median(s.theirsMS))
		t.Log(line)
	}
	t.Logf("all %d pages with an article: F1 median %.3f, mean %.3f, share >= 0.9: %.3f; with text nodes spaced: median %.3f, mean %.3f, share >= 0.9: %.3f",
		len(all), median(all), mean(all), share(all, 0.9), median(allSpaced), mean(allSpaced), share(allSpaced, 0.9))
	return all
}

// tokenF1 is the F1 of the two texts' bags of tokens: lower-cased runs of
// letters and digits, each Han, Hiragana or Katakana character a token of
// its own (those scripts have no spaces). Two empty texts agree (1).
func tokenF1(ours, theirs string) float64 {
	a, b := tokenCounts(ours), tokenCounts(theirs)
	na, nb, common := 0, 0, 0
	for tok, n := range a {
		na += n
		common += min(n, b[tok])
	}
	for _, n := range b {
		nb += n
	}
	switch {
	case na == 0 && nb == 0:
		return 1
	case common == 0:
		return 0
	}
	p, r := float64(common)/float64(na), float64(common)/float64(nb)
	return 2 * p * r / (p + r)
}

func tokenCounts(s string) map[string]int {
	counts := map[string]int{}
	start := -1
	for i, c := range s + " " {
		word := unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c)
		own := unicode.In(c, unicode.Han, unicode.Hiragana, unicode.Katakana)
		if start >= 0 && (!word || own) {
			counts[strings.ToLower(s[start:i])]++
			start = -1
		}
		switch {
		case own:
			counts[string(c)]++
		case word && start < 0:
			start = i
		}
	}
	return counts
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sum / float64(max(len(x), 1))
}

func share(x []float64, atLeast float64) float64 {
	n := 0
	for _, v := range x {
		if v >= atLeast {
			n++
		}
	}
	return float64(n) / float64(max(len(x), 1))
}
