package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// resumeDedupHost serves the three pages of TestResumeDedupAcrossRestart.
const resumeDedupHost = "127.0.0.2"

// resumeDedupText is page A's visible text, one paragraph per element. The
// last paragraph is where A links to B and C; B and C carry the same words
// as plain text.
var resumeDedupText = []string{
	`Horseshoe pitching is an old outdoor game played with real horseshoes or with
	shoes made for the purpose. Two stakes are driven into the ground forty feet
	apart, each in the middle of a box of clay, sand or loose earth that keeps the
	shoes from bouncing away. A player stands beside one stake and pitches two
	shoes, one after the other, toward the stake at the far end. Then the
	opponent pitches two shoes at the same stake, and when all four shoes have
	landed the players walk to the other end, count the points and pitch back.`,
	`A shoe that comes to rest around the stake, so that a straight edge laid
	across its open ends does not touch the stake, is called a ringer and is worth
	three points. A shoe that lands within six inches of the stake without
	encircling it is worth one point. Ringers cancel each other out: when both
	players throw a ringer in the same inning, neither ringer counts, and only the
	remaining shoes are compared. Most games are played to forty points, although
	some leagues count a fixed number of shoes instead and compare the totals.`,
	`The grip matters more than strength. Many pitchers hold the shoe by the side
	and let it turn once and a quarter in the air, so that it arrives open and
	facing the stake; others prefer a flip, in which the shoe turns end over end.
	A smooth underhand swing, a long step with the opposite foot and a steady
	release point make the difference between a ringer and a shoe that skids past
	the box. Beginners are often told to watch the stake, not the shoe, and to
	count a slow rhythm from the backswing to the moment they let go.`,
	`The game is older than the rules that now govern it. Soldiers and farm hands
	pitched worn shoes behind camps and barns long before anyone measured the
	distance, and the first written rules only appeared when clubs began to meet
	for tournaments. Today national associations publish the dimensions of the
	court, the weight of an official shoe and the height of the stake, and they
	keep records of the best pitchers, some of whom throw ringers with more than
	eight shoes out of ten over a whole season of league play.`,
	`Courts are cheap to build and easy to keep. A pair of iron stakes, two boxes
	framed with timber and a load of damp clay are all that a backyard needs, and
	a public park can fit several courts in the space of a single tennis court.
	The clay should be kept moist so that the shoes stick where they land, and it
	should be turned over with a spade before a match. A backboard behind each
	pit stops wild throws from rolling into the grass or toward the spectators.`,
	`Read the variant of this page or the copy of this page to compare them.`,
}

// resumeDedupEdits are the words of resumeDedupText that page B changes:
// two adjacent words, so that 6 of A's 495 looped 5-word shingles are
// replaced (exact Jaccard 0.976; the sketch estimate, pinned by
// checkResumeDedupFixture, is 83/84).
var resumeDedupEdits = strings.NewReplacer(
	"damp clay", "wet loam",
)

func resumeDedupPageA() string {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Horseshoe pitching</title></head>\n<body>\n<h1>Horseshoe pitching</h1>\n")
	last := len(resumeDedupText) - 1
	for _, p := range resumeDedupText[:last] {
		fmt.Fprintf(&b, "<p>%s</p>\n", p)
	}
	p := strings.Replace(resumeDedupText[last], "variant", `<a href="b.html">variant</a>`, 1)
	p = strings.Replace(p, "copy", `<a href="/copy/c.html">copy</a>`, 1)
	fmt.Fprintf(&b, "<p>%s</p>\n</body></html>\n", p)
	return b.String()
}

// resumeDedupPageB is A with a few words changed and no links.
func resumeDedupPageB() string {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Horseshoe pitching</title></head>\n<body>\n<h1>Horseshoe pitching</h1>\n")
	for _, p := range resumeDedupText {
		fmt.Fprintf(&b, "<p>%s</p>\n", resumeDedupEdits.Replace(p))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// resumeDedupPageC has A's visible text in other markup, under another
// title, without links.
func resumeDedupPageC() string {
	var b strings.Builder
	b.WriteString("<html><head><title>A copy</title><style>div{margin:1em}</style></head><body><main>\n<div class=\"t\"><b>Horseshoe</b> <i>pitching</i></div>\n")
	for _, p := range resumeDedupText {
		words := strings.Fields(p)
		half := len(words) / 2
		fmt.Fprintf(&b, "<div>\n<span>%s</span>\n<span>%s</span>\n</div>\n",
			strings.Join(words[:half], " "), strings.Join(words[half:], "\n"))
	}
	b.WriteString("</main><script>var x = 'not text';</script></body></html>\n")
	return b.String()
}

// TestResumeDedupAcrossRestart shows at crawl level that the near-duplicate
// indexes survive a restart: page A is fetched by one `crawler crawl`, and a
// second `crawler crawl` on the same data directory (a new Engine, a new
// Detector, Badger reopened) still classes a near-duplicate B and an exact
// duplicate C of A as duplicates of A, which only the index rebuilt from the
// stored signatures (crawl.Engine.Restore) can know about.
func TestResumeDedupAcrossRestart(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a.html":      resumeDedupPageA(),
		"b.html":      resumeDedupPageB(),
		"copy/c.html": resumeDedupPageC(),
	}
	for name, body := range files {
		p := filepath.Join(root, resumeDedupHost, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bSim := checkResumeDedupFixture(t, files)

	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	canon := func(path string) string {
		t.Helper()
		u, err := frontier.Canonicalize(web.URL(resumeDedupHost, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	aURL, bURL, cURL := canon("/a.html"), canon("/b.html"), canon("/copy/c.html")
	base := []string{"--delay", "0", "--workers", "2", "--allow-private-networks"}

	// requested returns the paths of the GET requests the web saw since
	// request number from, robots.txt left out.
	requested := func(from int) (paths []string, next int) {
		reqs := web.Requests()
		for _, r := range reqs[from:] {
			if r.Method == "GET" && r.Path != "/robots.txt" {
				paths = append(paths, r.Path)
			}
		}
		return paths, len(reqs)
	}

	// checkAfterRestart asserts the classes the second run gave A, B and C.
	checkAfterRestart := func(t *testing.T, d report.Data) {
		t.Helper()
		pages := pagesByURL(&d)
		a, b, c := pages[aURL], pages[bURL], pages[cURL]
		if a.Class != "unique" || a.Status != 200 {
			t.Errorf("A %s: %d %s, want 200 unique", aURL, a.Status, a.Class)
		}
		if b.Class != "near_duplicate" || b.DuplicateOf != aURL {
			t.Errorf("B %s after the restart: class %q duplicate_of %q, want near_duplicate of %s (the index of the first run was not rebuilt?)",
				bURL, b.Class, b.DuplicateOf, aURL)
		}
		if b.Method != dedup.MethodSupershingle && b.Method != dedup.MethodSimhash {
			t.Errorf("B found by method %q, want %q or %q", b.Method, dedup.MethodSupershingle, dedup.MethodSimhash)
		}
		if b.Similarity < 0.95 || b.Similarity != bSim {
			t.Errorf("B similarity %.4f, want the exact Jaccard %.4f of the settled candidate (>= 0.95)", b.Similarity, bSim)
		}
		if c.Class != "exact_duplicate" || c.DuplicateOf != aURL || c.Method != dedup.MethodExact || c.Similarity != 1 {
			t.Errorf("C %s after the restart: class %q duplicate_of %q method %q similarity %v, want exact_duplicate of %s",
				cURL, c.Class, c.DuplicateOf, c.Method, c.Similarity, aURL)
		}
		t.Logf("after the restart: B %s of %s by %s (similarity %.4f), C %s of %s by %s",
			b.Class, b.DuplicateOf, b.Method, b.Similarity, c.Class, c.DuplicateOf, c.Method)
		if n := len(d.Pages); n != 3 {
			t.Errorf("%d page records, want 3: %+v", n, d.Pages)
		}
	}

	// A crawl cut short by its page budget after A, resumed with no seeds on
	// the command line: the seeds and the queue (B and C, A's links) come
	// from the store.
	t.Run("budget", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		_, mark := requested(0)
		out, _ := resumeDedupCrawl(t, append(append([]string{"--data", data, "--max-pages", "1", "--quiet"}, base...), aURL)...)
		got, mark := requested(mark)
		if strings.Join(got, " ") != "/a.html" {
			t.Fatalf("first run fetched %q, want only /a.html; output %q", got, out)
		}
		first := resumeDedupReport(t, data)
		if p := pagesByURL(&first)[aURL]; p.Class != "unique" || len(first.Pages) != 1 || first.Stats.Complete {
			t.Fatalf("after the first run: %+v (complete %v), want A unique and nothing else", first.Pages, first.Stats.Complete)
		}

		// No URL on the command line: without the stored seeds this would
		// be a usage error.
		out, _ = resumeDedupCrawl(t, append([]string{"--data", data, "--quiet"}, base...)...)
		t.Logf("resume: %s", strings.TrimSpace(out))
		got, _ = requested(mark)
		if strings.Join(sortedCopy(got), " ") != "/b.html /copy/c.html" {
			t.Errorf("second run fetched %q, want /b.html and /copy/c.html once each", got)
		}
		d := resumeDedupReport(t, data)
		if !d.Stats.Complete {
			t.Errorf("resumed crawl not complete")
		}
		checkAfterRestart(t, d)
	})

	// A finished crawl of A alone (max depth 0: A's links are not
	// followed), extended by a second run that names B and C as new seeds on
	// the same data dir. A, remembered as seen, is not fetched again.
	t.Run("new-seeds", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		_, mark := requested(0)
		out, _ := resumeDedupCrawl(t, append(append([]string{"--data", data, "--max-depth", "0", "--quiet"}, base...), aURL)...)
		got, mark := requested(mark)
		if strings.Join(got, " ") != "/a.html" {
			t.Fatalf("first run fetched %q, want only /a.html; output %q", got, out)
		}
		out, _ = resumeDedupCrawl(t, append(append([]string{"--data", data, "--quiet"}, base...), bURL, cURL)...)
		t.Logf("second run: %s", strings.TrimSpace(out))
		got, _ = requested(mark)
		if strings.Join(sortedCopy(got), " ") != "/b.html /copy/c.html" {
			t.Errorf("second run fetched %q, want /b.html and /copy/c.html once each", got)
		}
		checkAfterRestart(t, resumeDedupReport(t, data))
	})

	// The control: B crawled into a fresh data dir without A is unique, so
	// its verdict above comes from A, recorded by the first run.
	t.Run("control", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		resumeDedupCrawl(t, append(append([]string{"--data", data, "--max-depth", "0", "--quiet"}, base...), bURL)...)
		d := resumeDedupReport(t, data)
		if p := pagesByURL(&d)[bURL]; p.Class != "unique" || p.Status != 200 || len(d.Pages) != 1 {
			t.Errorf("B alone in a fresh crawl: %+v, want one page, unique", d.Pages)
		}
	})
}

// checkResumeDedupFixture pins the pages' similarities with the crawler's own
// parser and dedup options, so the fixture cannot drift out of what the
// test means: B is a near-duplicate of A (exact Jaccard of the looped
// shingles 0.96-0.98, estimated >= the threshold, found by the index on its
// own) and C has exactly A's token stream. It returns the exact Jaccard of
// A and B, the similarity the crawl records (it settles the candidate on the
// stored text).
func checkResumeDedupFixture(t *testing.T, files map[string]string) float64 {
	t.Helper()
	cfg, err := configs.Load("")
	if err != nil {
		t.Fatal(err)
	}
	popts := parse.Options{URLTokens: cfg.Dedup.URLTokens, TitleTokens: cfg.Dedup.TitleTokens, BotName: cfg.Fetch.RobotsAgent, MaxTokens: 1 << 20}
	tokens := map[string][]string{}
	for name, body := range files {
		u, _ := url.Parse("http://" + resumeDedupHost + "/" + name)
		doc, err := parse.Parse([]byte(body), u, popts)
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = doc.Tokens
	}
	a, b, c := tokens["a.html"], tokens["b.html"], tokens["copy/c.html"]
	if len(a) < 300 || len(a) > 600 {
		t.Fatalf("A has %d words, want a few hundred", len(a))
	}
	if strings.Join(c, " ") != strings.Join(a, " ") {
		t.Fatalf("C's tokens differ from A's:\nA %q\nC %q", a, c)
	}
	if files["copy/c.html"] == files["a.html"] {
		t.Fatal("C must differ from A in markup")
	}

	det, err := dedup.New(crawl.DedupOptions(cfg.Dedup))
	if err != nil {
		t.Fatal(err)
	}
	exact := resumeDedupJaccard(det.Shingles(a, nil), det.Shingles(b, nil))
	sa, sb := det.Sign(a), det.Sign(b)
	est := dedup.Similarity(sa, sb)
	t.Logf("fixture: A %d words, B %d words, exact Jaccard of looped %d-word shingles %.4f, estimated %.4f (threshold %.2f)",
		len(a), len(b), det.Options().ShingleWords, exact, est, det.Options().Threshold)
	if exact < 0.96 || exact > 0.98 {
		t.Errorf("exact Jaccard(A, B) = %.4f, want 0.96-0.98", exact)
	}
	if est < det.Options().Threshold || est < 0.95 {
		t.Errorf("estimated Jaccard(A, B) = %.4f, want >= %.2f", est, det.Options().Threshold)
	}
	if sa.Exact == sb.Exact {
		t.Error("A and B have the same exact fingerprint")
	}
	// In one process, with A indexed, the index finds B by supershingle or
	// simhash and C by its fingerprint.
	if dec := det.CheckAndAdd(1, sa); dec.Class != dedup.Unique {
		t.Fatalf("A on an empty index: %+v", dec)
	}
	if dec := det.CheckAndAdd(2, sb); dec.Class != dedup.Near || dec.Original != 1 {
		t.Errorf("B against A: %+v, want near duplicate of 1", dec)
	}
	if dec := det.CheckAndAdd(3, det.Sign(c)); dec.Class != dedup.Exact || dec.Original != 1 {
		t.Errorf("C against A: %+v, want exact duplicate of 1", dec)
	}
	return exact
}

// resumeDedupJaccard is the Jaccard similarity of two sets of shingle
// fingerprints.
func resumeDedupJaccard(a, b []uint64) float64 {
	sa := map[uint64]bool{}
	for _, x := range a {
		sa[x] = true
	}
	sb := map[uint64]bool{}
	for _, x := range b {
		sb[x] = true
	}
	inter := 0
	for x := range sa {
		if sb[x] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// resumeDedupCrawl runs `crawler crawl args...` in this process and returns
// its stdout and stderr.
func resumeDedupCrawl(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), append([]string{"crawl"}, args...), &out, &errOut); err != nil {
		t.Fatalf("crawl %v: %v\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// resumeDedupReport reads the crawl in data through `crawler report --format json`.
func resumeDedupReport(t *testing.T, data string) report.Data {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", path}, &out, &errOut); err != nil {
		t.Fatalf("report: %v\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d report.Data
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	return d
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
