package dedupeval

import (
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

func TestSimilarPairsIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sets [][]uint64
	for range 60 {
		base := make([]uint64, 5+rng.IntN(40))
		for i := range base {
			base[i] = uint64(rng.IntN(200))
		}
		for range 3 { // near copies
			c := slices.Clone(base)
			for range rng.IntN(4) {
				c[rng.IntN(len(c))] = uint64(rng.IntN(200))
			}
			slices.Sort(c)
			sets = append(sets, slices.Compact(c))
		}
	}
	sets = append(sets, nil, nil)
	got := SimilarPairs(sets, 0.5)
	var want []Pair
	for a := range sets {
		for b := a + 1; b < len(sets); b++ {
			if j := Jaccard(sets[a], sets[b]); j >= 0.5 && len(sets[a]) > 0 {
				want = append(want, Pair{A: a, B: b, J: j})
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("prefix filtering found %d pairs, brute force %d", len(got), len(want))
	}
	if len(want) < 100 {
		t.Fatalf("test too weak: only %d pairs", len(want))
	}
}

func TestEvalSynthetic(t *testing.T) {
	pages := map[string][]string{}
	rng := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		return string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(26)))
	}
	for p := range 30 {
		toks := make([]string, 500+rng.IntN(500))
		for i := range toks {
			toks[i] = word()
		}
		pages[string(rune('A'+p))+"0"] = toks
		near := slices.Clone(toks)
		near[rng.IntN(len(near))] = "changed"
		pages[string(rune('A'+p))+"1"] = near
	}
	rep := Eval(pages, dedup.DefaultOptions())
	if len(rep.Pairs) < 30 {
		t.Fatalf("%d pairs, want >= 30 near pairs", len(rep.Pairs))
	}
	names := []string{}
	for _, s := range rep.Settings {
		names = append(names, s.Name)
	}
	if want := []string{"altavista", "bing", "simhash-bphs", "simhash-psm", "combined+verify"}; !slices.Equal(names, want) {
		t.Fatalf("settings %v, want %v", names, want)
	}
	comb := rep.Settings[4]
	if comb.RecallAt95 < 0.9 || comb.FalseDrops != 0 || comb.Dropped < 27 {
		t.Errorf("combined: %+v", comb)
	}
	if !strings.Contains(rep.String(), "combined+verify") {
		t.Error("report text lacks the combined setting")
	}
}

// corpusDir returns the unpacked shared corpus (testweb.Corpus: found through
// $HORSESHOE_SHARED or a shared/ directory above the working directory). It
// skips without the corpus, except under CI, which must have it.
func corpusDir(tb testing.TB) string {
	tb.Helper()
	root, _ := testweb.NeedCorpus(tb)
	return root
}

// forEachCorpusPage calls fn with every n-th HTML file of the real corpus
// (in path order), decoded as the crawl decodes it (the servers send
// text/html with no charset: the page's <meta> or sniffing decides) and
// parsed with opts, under the URL its path names. Symlinks are followed: they are the
// corpus's deliberate exact duplicates.
func forEachCorpusPage(tb testing.TB, n int, opts parse.Options, fn func(u string, doc *parse.Document)) {
	tb.Helper()
	dir := corpusDir(tb)
	k := 0
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		if k++; (k-1)%n != 0 {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return nil // dangling link
		}
		rel, _ := filepath.Rel(dir, path)
		u, err := url.Parse("http://" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		body, _ = fetch.ToUTF8(body, "text/html")
		if doc, err := parse.Parse(body, u, opts); err == nil {
			fn(u.String(), doc)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestCorpusTargets measures every setting on the real corpus and asserts
// issue 17's targets for the default setting: recall at J >= 0.95 at least
// 0.99 and at J >= 0.90 at least 0.97, precision (a dropped page's named
// original has J >= 0.80) at least 0.995, and no dropped page whose named
// original has J < 0.80 at all: with exact settlement nothing below the
// threshold (0.90) is dropped. The detector is deterministic, so this cannot
// flake.
func TestCorpusTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus evaluation skipped in -short mode")
	}
	pages := map[string][]string{}
	forEachCorpusPage(t, 1, parse.Options{}, func(u string, doc *parse.Document) { pages[u] = doc.Tokens })
	if len(pages) < 1000 {
		t.Fatalf("only %d pages parsed", len(pages))
	}
	rep := Eval(pages, dedup.DefaultOptions())
	t.Logf("\n%s", rep)
	comb := rep.Settings[len(rep.Settings)-1]
	if comb.RecallAt95 < 0.99 {
		t.Errorf("default setting: recall at J >= 0.95 is %.4f, want >= 0.99", comb.RecallAt95)
	}
	if comb.RecallAt90 < 0.97 {
		t.Errorf("default setting: recall at J >= 0.90 is %.4f, want >= 0.97", comb.RecallAt90)
	}
	if comb.Precision < 0.995 {
		t.Errorf("default setting: precision %.4f (%d of %d dropped pages have J < 0.80 with their named original), want >= 0.995",
			comb.Precision, comb.FalseDrops, comb.Dropped)
	}
	if comb.FalseDrops != 0 {
		t.Errorf("default setting: %d dropped pages have J < 0.80 with their named original, want none", comb.FalseDrops)
	}
	if comb.Settlements > dedup.MaxSettle*len(pages) {
		t.Errorf("%d settlements for %d pages, more than %d a page", comb.Settlements, len(pages), dedup.MaxSettle)
	}
}
