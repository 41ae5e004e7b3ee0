//go:build e2e

package variantweb

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// testSites are three corpus sites of different makes (DocBook, npm's generator with no
// index page, a Hugo site at "/" with dir/index.html pages), 20 pages of each.
var testSites = []struct{ host, prefix string }{
	{"127.0.0.2", "/docs/15/"},
	{"127.0.0.10", "/npm/v10.9.1/"},
	{"127.0.0.8", "/"},
}

const (
	samplePages = 20
	seeds       = 20 // per family
)

var (
	sitesOnce sync.Once
	sites     []*Site
	sitesErr  error
)

// loadSites loads the test sites once; without the corpus the test is skipped, except
// under CI.
func loadSites(t *testing.T) []*Site {
	t.Helper()
	sitesOnce.Do(func() {
		root, _, err := testweb.Corpus()
		if err != nil {
			sitesErr = err
			return
		}
		for _, s := range testSites {
			site, err := Load(root, s.host, s.prefix, samplePages)
			if err != nil {
				sitesErr = err
				return
			}
			sites = append(sites, site)
		}
	})
	testweb.RequireCorpus(t, sitesErr)
	return sites
}

// generate returns the variant of family f for seed, on the site the seed picks.
func generate(t *testing.T, f Family, seed int64) *Variant {
	t.Helper()
	ss := loadSites(t)
	v, err := Generate(ss[int(seed)%len(ss)], f, seed, Options{})
	if err != nil {
		t.Fatalf("%s seed %d: %v", f, seed, err)
	}
	return v
}

// doc parses a page as the crawler does.
func doc(t *testing.T, body []byte, u string) *parse.Document {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	d, err := parse.Parse(body, pu, parse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sourceDocs caches the parsed source pages, by their *SourcePage.
var sourceDocs sync.Map

// sourceDoc parses the source page of a variant page.
func sourceDoc(t *testing.T, v *Variant, p *Page) *parse.Document {
	t.Helper()
	sp, ok := v.Site.Page(strings.TrimPrefix(p.Source, v.Site.Prefix))
	if !ok {
		t.Fatalf("%s: source %s is not a page of the site", p.Path, p.Source)
	}
	if d, ok := sourceDocs.Load(sp); ok {
		return d.(*parse.Document)
	}
	d := doc(t, sp.Body, "http://"+v.Site.Host+p.Source)
	sourceDocs.Store(sp, d)
	return d
}

// exactJaccard is an independent computation of the ground truth: looped 5-word shingles
// as strings (no fingerprints), over parse.Parse's tokens.
func exactJaccard(a, b []string) float64 {
	set := func(toks []string) map[string]bool {
		m := make(map[string]bool, len(toks))
		for i := range toks {
			var sb strings.Builder
			for k := range 5 {
				sb.WriteString(toks[(i+k)%len(toks)])
				sb.WriteByte(0)
			}
			m[sb.String()] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	common := 0
	for s := range sa {
		if sb[s] {
			common++
		}
	}
	return float64(common) / float64(len(sa)+len(sb)-common)
}

// tokenDiff returns the tokens of b missing from a (added) and of a missing from b
// (removed), as multisets.
func tokenDiff(a, b []string) (added, removed []string) {
	count := make(map[string]int)
	for _, t := range a {
		count[t]++
	}
	for _, t := range b {
		count[t]--
	}
	for t, n := range count {
		for ; n > 0; n-- {
			removed = append(removed, t)
		}
		for ; n < 0; n++ {
			added = append(added, t)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func hasDigit(s string) bool { return strings.ContainsFunc(s, unicode.IsDigit) }

// choice returns the value of a choice the seed made.
func choice(v *Variant, name string) string {
	for _, c := range v.Choices {
		if k, val, _ := strings.Cut(c, "="); k == name {
			return val
		}
	}
	return ""
}

// tokenSet is the set of tokens of texts.
func tokenSet(texts ...string) map[string]bool {
	m := make(map[string]bool)
	for _, s := range texts {
		for _, t := range parse.Tokenize(nil, s) {
			m[t] = true
		}
	}
	return m
}

func TestDeterministic(t *testing.T) {
	loadSites(t)
	for _, f := range Families() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			a, b := generate(t, f, 7), generate(t, f, 7)
			if !slices.Equal(a.Choices, b.Choices) || len(a.Pages) != len(b.Pages) {
				t.Fatalf("seed 7 twice: %v, %d pages against %v, %d pages", a.Choices, len(a.Pages), b.Choices, len(b.Pages))
			}
			for i := range a.Pages {
				pa, pb := a.Pages[i], b.Pages[i]
				if pa.Path != pb.Path || !bytes.Equal(pa.Body, pb.Body) || pa.J != pb.J || pa.Kind != pb.Kind {
					t.Errorf("seed 7 twice: page %s differs", pa.Path)
				}
			}
			differ := false
			for s := int64(10); s < 13 && !differ; s++ {
				c := generate(t, f, s*int64(len(testSites))+7%int64(len(testSites)))
				differ = !slices.Equal(a.Choices, c.Choices) || len(a.Pages) != len(c.Pages) ||
					slices.ContainsFunc(a.Pages, func(p Page) bool {
						q, ok := c.Lookup(p.Path)
						return !ok || !bytes.Equal(p.Body, q.Body)
					})
			}
			if !differ {
				t.Errorf("seeds 7, 37, 40, 43 give the same variant")
			}
		})
	}
}

// TestGroundTruth checks every page's J against an independent computation (string
// shingles), and the page's source and kind.
func TestGroundTruth(t *testing.T) {
	loadSites(t)
	for _, f := range Families() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			for seed := range int64(3) {
				v := generate(t, f, seed)
				if v.Mirror != f.Mirror() {
					t.Errorf("Mirror = %v", v.Mirror)
				}
				for i := range v.Pages {
					p := &v.Pages[i]
					if p.Source == "" {
						if p.Kind != KindAdded || p.J != 0 {
							t.Errorf("seed %d %s: no source, kind %s, J %v", seed, p.Path, p.Kind, p.J)
						}
						continue
					}
					got := doc(t, p.Body, "http://"+v.Host+p.Path)
					want := exactJaccard(got.Tokens, sourceDoc(t, v, p).Tokens)
					if d := p.J - want; d > 1e-9 || d < -1e-9 {
						t.Errorf("seed %d %s: J = %.6f, string shingles give %.6f", seed, p.Path, p.J, want)
					}
					if p.Kind == KindCopy && p.J != 1 {
						t.Errorf("seed %d %s: a copy with J = %v", seed, p.Path, p.J)
					}
				}
			}
		})
	}
}

// TestFamilies checks over 20 seeds that every family changes what it claims and
// nothing else.
func TestFamilies(t *testing.T) {
	loadSites(t)
	for _, f := range Families() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			var js []float64 // J of every page with a source, all seeds
			for seed := range int64(seeds) {
				v := generate(t, f, seed)
				checkFamily(t, v)
				for _, p := range v.Pages {
					if p.Source != "" {
						js = append(js, p.J)
					}
				}
			}
			slices.Sort(js)
			med := js[len(js)/2]
			above := len(js) - sort95(js)
			t.Logf("%s: %d pages, J min %.3f p10 %.3f median %.3f max %.3f, %d at J >= 0.95",
				f, len(js), js[0], js[len(js)/10], med, js[len(js)-1], above)
			switch f {
			case FamilyVersion:
				if med < 0.84 || med > 0.92 {
					t.Errorf("median J %.3f, want about 0.88", med)
				}
				if above > len(js)/20 {
					t.Errorf("%d of %d pages at J >= 0.95: near duplicates, not another version", above, len(js))
				}
			case FamilyTemplate:
				if med > 0.3 || js[len(js)-1] >= 0.8 {
					t.Errorf("median J %.3f, max %.3f: the content should differ", med, js[len(js)-1])
				}
			}
		})
	}
}

// sort95 is the index of the first J >= 0.95 in sorted js.
func sort95(js []float64) int {
	i, _ := slices.BinarySearch(js, 0.95)
	return i
}

// checkFamily checks one variant against its family's claims.
func checkFamily(t *testing.T, v *Variant) {
	t.Helper()
	site := v.Site
	docs := make(map[string]*parse.Document, len(v.Pages))
	for _, p := range v.Pages {
		docs[p.Path] = doc(t, p.Body, "http://"+v.Host+p.Path)
	}
	changed := 0
	for i := range v.Pages {
		p := &v.Pages[i]
		if p.Kind != KindCopy {
			changed++
		}
		if p.Source == "" {
			if v.Family != FamilySuperset {
				t.Errorf("seed %d %s: added page in family %s", v.Seed, p.Path, v.Family)
			}
			continue
		}
		got := docs[p.Path]
		src := sourceDoc(t, v, p)
		added, removed := tokenDiff(src.Tokens, got.Tokens)
		fail := func(format string, a ...any) {
			t.Errorf("seed %d %s (%v): %s", v.Seed, p.Path, v.Choices, fmt.Sprintf(format, a...))
		}
		switch v.Family {
		case FamilyMarkup, FamilyLayout, FamilySubset:
			if got.Text != src.Text || p.J != 1 {
				fail("text changed (J %v)", p.J)
			}
		case FamilyDates:
			for _, tok := range slices.Concat(added, removed) {
				if !hasDigit(tok) && !DateWords[tok] {
					fail("token %q changed, not a date", tok)
				}
			}
			if len(added) == 0 {
				fail("no date added")
			}
		case FamilyBuild, FamilyBanner:
			name := map[Family]string{FamilyBuild: "footer", FamilyBanner: "banner"}[v.Family]
			want := parse.Tokenize(nil, choice(v, name))
			if len(removed) > 0 || !slices.Equal(added, sorted(want)) {
				fail("added %v, removed %v; want added %v", added, removed, want)
			}
		case FamilyNav:
			allowed := tokenSet(slices.Concat(navTexts, slices.Collect(mapValues(renames)))...)
			for _, tok := range added {
				if !allowed[tok] {
					fail("token %q added, not a navigation link", tok)
				}
			}
		case FamilyReorder:
			if len(added)+len(removed) > 0 {
				fail("tokens changed: added %v, removed %v", added, removed)
			}
		case FamilySuperset:
			if p.Kind == KindCopy && p.J != 1 {
				fail("copy with J %v", p.J)
			}
			if len(removed) > 0 {
				fail("tokens removed: %v", removed)
			}
		case FamilyUpdated:
			if (p.Kind == KindUpdated) == (p.J == 1) {
				fail("kind %s with J %v", p.Kind, p.J)
			}
		case FamilyTranslated:
			if p.Kind == KindTranslated && p.J >= 0.5 {
				fail("translated page with J %v: a duplicate of its source", p.J)
			}
			if p.Kind == KindCopy && p.J != 1 {
				fail("copy with J %v", p.J)
			}
		}
	}
	n := len(site.Pages)
	count := func(k Kind) int {
		c := 0
		for _, p := range v.Pages {
			if p.Kind == k {
				c++
			}
		}
		return c
	}
	switch v.Family {
	case FamilySubset:
		if len(v.Pages)+len(v.Missing) != n || len(v.Pages) < n/10 || len(v.Pages) > (9*n+9)/10 {
			t.Errorf("seed %d: subset keeps %d of %d pages (%d missing)", v.Seed, len(v.Pages), n, len(v.Missing))
		}
	case FamilySuperset:
		if a := count(KindAdded); a < 1 || a > n/2+1 || len(v.Missing) > 0 {
			t.Errorf("seed %d: superset adds %d pages to %d", v.Seed, a, n)
		}
		checkAdded(t, v)
	case FamilyUpdated:
		if u := count(KindUpdated); u < 1 || u > max(1, n/20+1) {
			t.Errorf("seed %d: %d of %d pages updated", v.Seed, u, n)
		}
	case FamilyTranslated:
		if tr := count(KindTranslated); tr < 1 || tr > n*3/10+1 {
			t.Errorf("seed %d: %d of %d pages translated", v.Seed, tr, n)
		}
	default:
		if len(v.Pages) != n || len(v.Missing) != 0 {
			t.Errorf("seed %d: %d pages of %d, %d missing", v.Seed, len(v.Pages), n, len(v.Missing))
		}
	}
	if v.Family != FamilyLayout && v.Family != FamilySubset && changed == 0 && v.Family != FamilyReorder {
		t.Errorf("seed %d: no page changed", v.Seed)
	}
	checkLinks(t, v, docs)
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// checkAdded: an added page is no near-duplicate of any page of the site.
func checkAdded(t *testing.T, v *Variant) {
	t.Helper()
	for _, p := range v.Pages {
		if p.Source != "" {
			continue
		}
		sh, err := Shingles(p.Body, "http://"+v.Host+p.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range v.Site.Pages {
			if j := Jaccard(sh, sp.shingles); j >= 0.5 {
				t.Errorf("seed %d: added page %s has J %.3f with %s", v.Seed, p.Path, j, sp.Rel)
			}
		}
	}
}

// checkLinks: every link of a variant page to a page of the site lands on the variant's
// page of that path, or on a missing page only when the variant keeps dangling links;
// no link is left pointing into the source site.
func checkLinks(t *testing.T, v *Variant, docs map[string]*parse.Document) {
	t.Helper()
	site := v.Site
	for _, p := range v.Pages {
		d := docs[p.Path]
		for _, l := range d.Links {
			u, err := url.Parse(l.URL)
			if err != nil {
				t.Fatal(err)
			}
			if u.Host == site.Host && strings.HasPrefix(u.Path, site.Prefix) && !(v.SameHost && strings.HasPrefix(u.Path, v.Prefix)) {
				t.Errorf("seed %d %s: link %s into the source site", v.Seed, p.Path, l.URL)
				continue
			}
			if u.Host != v.Host || !strings.HasPrefix(u.Path, v.Prefix) {
				continue
			}
			if _, ok := v.Lookup(u.Path); ok {
				continue
			}
			rel := strings.TrimPrefix(u.Path, v.Prefix)
			if rel == "" || strings.HasSuffix(rel, "/") {
				rel += "index.html"
			} else if v.Extensionless && path.Ext(rel) == "" {
				rel += ".html"
			}
			if _, ok := site.Page(rel); ok && !(v.Dangling && slices.Contains(v.Missing, site.Path(rel))) {
				t.Errorf("seed %d %s: link %s to a page of the site that the variant does not have", v.Seed, p.Path, l.URL)
			}
		}
	}
}

// TestServed writes variants, serves them with testweb and fetches every page of both
// sides at the URL the variant links it by.
func TestServed(t *testing.T) {
	loadSites(t)
	for _, tc := range []struct {
		f    Family
		seed int64
	}{{FamilyLayout, 0}, {FamilyLayout, 1}, {FamilyLayout, 2}, {FamilyLayout, 5}, {FamilySubset, 3}, {FamilySuperset, 4}} {
		v := generate(t, tc.f, tc.seed)
		t.Run(fmt.Sprintf("%s-%d", tc.f, tc.seed), func(t *testing.T) {
			dir := t.TempDir()
			if err := v.Write(dir); err != nil {
				t.Fatal(err)
			}
			web, err := loopweb.Start(dir, loopweb.Options{Handler: v.Handler})
			if err != nil {
				t.Fatal(err)
			}
			defer web.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			get := func(u string) (int, []byte) {
				resp, err := client.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, b
			}
			for _, p := range v.Pages {
				if code, b := get(web.URL(v.Host, p.Path)); code != 200 || !bytes.Equal(b, p.Body) {
					t.Errorf("%s (%v): status %d, same bytes %v", p.Path, v.Choices, code, bytes.Equal(b, p.Body))
				}
			}
			for _, sp := range v.Site.Pages {
				if code, b := get(web.URL(v.Site.Host, v.Site.Path(sp.Rel))); code != 200 || !bytes.Equal(b, sp.Body) {
					t.Errorf("source %s: status %d", sp.Rel, code)
				}
			}
		})
	}
}
