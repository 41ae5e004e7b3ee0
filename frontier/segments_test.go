package frontier

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

func TestSessionSegmentShape(t *testing.T) {
	for seg, want := range map[string]bool{
		"(S(abcdefghijklmnopqrstuvwx))":     true,
		"(X(1)S(abcdefghijklmnopqrstuvwx))": true,
		"(A(x)F(y))":                        true,
		"3f9a0c1b2d4e5f60718293a4b5c6d7e8":  true,
		"3.11":                              false,
		"v10.9.1":                           false,
		"latest":                            false,
		"en-us":                             false,
		"my-article-2024-about-things":      false,
		"(S)":                               false,
		"(S(a)":                             false,
		"(s(abc))":                          false,
		"(S(a(b)))":                         false,
		"20231104123456789012":              false, // digits only
	} {
		if got := sessionSegment(seg); got != want {
			t.Errorf("sessionSegment(%q) = %v, want %v", seg, got, want)
		}
	}
	// Only directories are candidates: the page itself never is.
	var names []string
	for name, parts := range sessionSegments("/(S(abc))/x/3f9a0c1b2d4e5f60718293a4b5c6d7e8") {
		names = append(names, name+"="+parts[1]+" rest="+parts[2])
	}
	if want := []string{"/*/=(S(abc)) rest=x/3f9a0c1b2d4e5f60718293a4b5c6d7e8"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("sessionSegments: %q, want %q", names, want)
	}
}

// segTrap shows l a session trap as a crawl sees it: pages fetched under a fresh id
// each (form wraps it: "/(S(%s))/" or "/sess/%s/"), each real page its own cluster,
// each page linking to the next three under the id its response minted. It returns
// the number of pages observed when the rule was decided (0: never) and the rule.
func segTrap(l *ParamLearner, form string, pages, max int) (int, *ParamRule) {
	real := []string{"", "a", "b", "c", "d", "e", "f"}[:pages]
	id := func(n int) string { return fmt.Sprintf("%032x", n*7919+0xabc0000) }
	// A queue of (page, id): the seed "/" has no session.
	type item struct {
		page int
		url  string
	}
	queue := []item{{0, "http://h/"}}
	for n := 1; n <= max && len(queue) > 0; n++ {
		it := queue[0]
		queue = queue[1:]
		var links []string
		for k := 1; k <= 3; k++ {
			p := (it.page + k) % len(real)
			u := "http://h" + fmt.Sprintf(form, id(n)) + real[p]
			links = append(links, u)
			queue = append(queue, item{p, u})
		}
		for _, r := range l.Observe(it.url, uint64(100+it.page), links) {
			if r.Active() {
				return n, &r
			}
		}
	}
	return 0, nil
}

func TestParamLearnerSessionSegment(t *testing.T) {
	for _, form := range []string{"/(S(%s))/", "/(X(1)S(%s))/", "/sess/%s/"} {
		l := NewParamLearner(ParamOptions{})
		n, r := segTrap(l, form, 5, 1000)
		if r == nil {
			t.Errorf("%s: not learned in 1000 pages", form)
			continue
		}
		// Every page committed shows one new id in its links: the rule is
		// decided at the 32nd page, not before (the pairs come sooner).
		if n != DefaultSegMinValues {
			t.Errorf("%s: decided at page %d, want %d", form, n, DefaultSegMinValues)
		}
		name := strings.SplitN(form, "%s", 2)[0]
		name = name[:strings.LastIndexByte(name, '/')+1] + "*/"
		if r.Param != name || r.Host != "h" || !sessionSegment(r.Value) || r.Paths < DefaultSegMinPaths {
			t.Errorf("%s: rule %+v, want %s with a session value", form, r, name)
		}
		a := l.Canonical("http://h" + fmt.Sprintf(form, "ffffffffffffffff0000000000000001") + "b?x=1")
		b := l.Canonical("http://h" + fmt.Sprintf(form, "0123456789abcdef0123456789abcdef") + "b?x=1")
		if a != b || l.Canonical(a) != a || !strings.HasSuffix(a, "/b?x=1") || !strings.Contains(a, r.Value) {
			t.Errorf("%s: canonical %q and %q, want one URL with %q", form, a, b, r.Value)
		}
		if u := "http://h/sess/x/b"; l.Canonical(u) != u {
			t.Errorf("%s: %s canonicalized to %s", form, u, l.Canonical(u))
		}
	}
}

// TestParamLearnerVersionsNeverLearned: a version directory of k < SegMinValues
// values, named like session tokens, whose pages are all exact duplicates across
// versions (the worst case: every pair is evidence, none counter-evidence), and
// every page linking to the same page of every version, is never learned,
// whatever the order the pages come in. With SegMinValues versions it is (the
// count is what guards it).
func TestParamLearnerVersionsNeverLearned(t *testing.T) {
	seed := testtools.Seed(t, "./frontier/")
	rng := rand.New(rand.NewPCG(seed, 27))
	for round := 0; round < 20; round++ {
		k := 3 + rng.IntN(DefaultSegMinValues-3)
		if round == 0 {
			k = DefaultSegMinValues - 1
		}
		for _, k := range []int{k, DefaultSegMinValues} {
			versions := make([]string, k)
			for i := range versions {
				versions[i] = fmt.Sprintf("b%015x%016x", rng.Uint64N(1<<60), rng.Uint64())
			}
			pages := 2 + rng.IntN(10)
			type page struct{ v, p int }
			var all []page
			for v := range versions {
				for p := 0; p < pages; p++ {
					all = append(all, page{v, p})
				}
			}
			rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			url := func(v, p int) string { return fmt.Sprintf("http://h/docs/%s/p%d", versions[v], p) }
			l := NewParamLearner(ParamOptions{})
			var learned *ParamRule
			for _, pg := range all {
				var links []string
				for v := range versions {
					links = append(links, url(v, pg.p))
				}
				for p := 0; p < pages; p++ {
					links = append(links, url(pg.v, p))
				}
				for _, r := range l.Observe(url(pg.v, pg.p), uint64(pg.p), links) {
					if r.Active() {
						learned = &r
					}
				}
			}
			if got, want := learned != nil, k >= DefaultSegMinValues && pages >= DefaultSegMinPaths; got != want {
				t.Errorf("%d versions of %d pages: learned %v (%+v), want %v", k, pages, got, learned, want)
			}
		}
	}
}

// TestParamLearnerSegmentCounter: a token-named directory that selects content
// (product ids: /item/<id>/reviews differs between two ids) is blocked by the
// parameter rule's counter-evidence, however many values its position shows and
// however many of its pages are the same under every id.
func TestParamLearnerSegmentCounter(t *testing.T) {
	l := NewParamLearner(ParamOptions{})
	id := func(n int) string { return fmt.Sprintf("%032x", n*104729+0xdef00000) }
	u := func(n int, page string) string { return "http://h/item/" + id(n) + "/" + page }
	// Two products whose review pages differ.
	l.Observe(u(0, "reviews"), 1, nil)
	l.Observe(u(1, "reviews"), 2, nil)
	// Then 64 products whose other pages are all the same boilerplate.
	for n := 2; n < 66; n++ {
		var links []string
		for k := 0; k < 3; k++ {
			links = append(links, u(n+k, "shipping"))
		}
		for i, page := range []string{"shipping", "returns", "warranty", "faq"} {
			for _, r := range l.Observe(u(n, page), uint64(10+i), links) {
				if r.Active() {
					t.Fatalf("learned %+v", r)
				}
			}
		}
	}
	rules := l.Rules()
	if len(rules) != 1 || rules[0].Param != "/item/*/" || rules[0].Counter == nil || rules[0].Decided {
		t.Errorf("rules %+v, want /item/*/ blocked by counter-evidence", rules)
	}
	if c := l.Canonical(u(5, "faq")); c != u(5, "faq") {
		t.Errorf("canonical %s, want it unchanged", c)
	}
}
