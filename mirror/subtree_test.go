package mirror

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// TestSubtreeEvidenceArithmetic: n is the smallest whole number with
// q0^n <= alpha, and the defaults give 5 (0.25^5 = 0.00098 <= 0.001 <
// 0.25^4 = 0.0039).
func TestSubtreeEvidenceArithmetic(t *testing.T) {
	if n := SubtreeEvidence(DefaultSubtreeErrorRate, DefaultDeadLinkRate); n != 5 {
		t.Errorf("defaults: n = %d, want 5", n)
	}
	for _, c := range []struct {
		alpha, q0 float64
		want      int
	}{{0.001, 0.25, 5}, {0.01, 0.1, 2}, {0.001, 0.1, 3}, {0.05, 0.5, 5}, {0.5, 0.5, 1}, {0.001, 0.5, 10}, {1e-6, 0.25, 10}} {
		if n := SubtreeEvidence(c.alpha, c.q0); n != c.want {
			t.Errorf("SubtreeEvidence(%g, %g) = %d, want %d", c.alpha, c.q0, n, c.want)
		}
	}
	for _, alpha := range []float64{1e-6, 1e-4, 0.001, 0.01, 0.05, 0.2} {
		for _, q0 := range []float64{0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9} {
			n := SubtreeEvidence(alpha, q0)
			if p := math.Pow(q0, float64(n)); p > alpha*(1+1e-12) {
				t.Errorf("alpha %g q0 %g: n = %d, q0^n = %g > alpha", alpha, q0, n, p)
			}
			if p := math.Pow(q0, float64(n-1)); n > 1 && p <= alpha {
				t.Errorf("alpha %g q0 %g: n = %d is not the smallest (q0^(n-1) = %g)", alpha, q0, n, p)
			}
		}
	}
}

// TestSubtreeDecision: n - 1 lacks decide nothing, the n-th decides; a page
// served under the prefix before blocks it, after withdraws it; the rule
// covers the whole subtree and nothing beside it.
func TestSubtreeDecision(t *testing.T) {
	s := NewSubtrees(SubtreeOptions{})
	n := s.Needed()
	s.Served("http://h/docs/index.html")
	for i := range n - 1 {
		if got := s.Lack(fmt.Sprintf("http://h/docs/man2/p%d.html", i)); len(got) > 0 {
			t.Fatalf("decided after %d lacks: %+v", i+1, got)
		}
	}
	got := s.Lack("http://h/docs/man2/sub/q.html")
	if len(got) != 1 || got[0].Prefix != "http://h/docs/man2/" || got[0].Lacks != n || got[0].ErrorRate != DefaultSubtreeErrorRate {
		t.Fatalf("after %d lacks: %+v, want http://h/docs/man2/ decided", n, got)
	}
	if _, ok := s.Missing("http://h/docs/man2/other/x.html"); !ok {
		t.Error("a URL deeper in the subtree is not covered")
	}
	for _, u := range []string{"http://h/docs/man1/x.html", "http://h/docs/x.html", "http://g/docs/man2/x.html"} {
		if r, ok := s.Missing(u); ok {
			t.Errorf("%s is covered by %+v", u, r)
		}
	}
	// "http://h/docs/" served a page: blocked whatever the lacks.
	if slices.ContainsFunc(s.Rules(), func(r SubtreeRule) bool { return r.Prefix == "http://h/docs/" }) {
		t.Error("a prefix with a served page was decided")
	}
	w := s.Served("http://h/docs/man2/found.html")
	if len(w) != 1 || !w[0].Withdrawn || w[0].Counter != "http://h/docs/man2/found.html" {
		t.Fatalf("served after the decision: %+v, want the rule withdrawn", w)
	}
	if _, ok := s.Missing("http://h/docs/man2/x.html"); ok {
		t.Error("a withdrawn rule still covers its subtree")
	}
	for i := range 3 * n {
		if got := s.Lack(fmt.Sprintf("http://h/docs/man2/again%d.html", i)); len(got) > 0 {
			t.Fatalf("a blocked prefix was decided again: %+v", got)
		}
	}
	// Restored rules act as decided ones.
	r := NewSubtrees(SubtreeOptions{})
	r.Restore([]SubtreeRule{{Prefix: "http://h/a/", Lacks: n, Decided: true, Needed: n}, {Prefix: "http://h/b/", Decided: true, Withdrawn: true}})
	if _, ok := r.Missing("http://h/a/x"); !ok {
		t.Error("a restored rule does not cover its subtree")
	}
	if _, ok := r.Missing("http://h/b/x"); ok {
		t.Error("a restored withdrawn rule covers its subtree")
	}
}

// TestSubtreeScatteredLacks: dead links scattered over directories that
// serve pages never decide a rule, whatever their order and number.
// Seeded (HORSESHOE_SEED).
func TestSubtreeScatteredLacks(t *testing.T) {
	seed := testtools.Seed(t, "./mirror/")
	rng := rand.New(rand.NewPCG(seed, 3))
	s := NewSubtrees(SubtreeOptions{})
	type ev struct {
		u      string
		served bool
	}
	var evs []ev
	for d := range 20 {
		for p := range 30 {
			u := fmt.Sprintf("http://h/d%d/s%d/p%d.html", d, p%3, p)
			evs = append(evs, ev{u, p%3 != 0 || p < 3}) // a dead link in most of each leaf's pages, one served page per leaf
		}
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	// Each leaf directory's one served page comes first among its own
	// pages; the rest in the shuffled order.
	slices.SortStableFunc(evs, func(a, b ev) int {
		switch {
		case a.served && !b.served:
			return -1
		case !a.served && b.served:
			return 1
		}
		return 0
	})
	for _, e := range evs {
		var got []SubtreeRule
		if e.served {
			s.Served(e.u)
		} else {
			got = s.Lack(e.u)
		}
		if len(got) > 0 {
			t.Fatalf("scattered lacks decided %+v", got)
		}
	}
}

// TestSubtreeErrorRate: directories that exist, whose links are dead with
// probability q0 each, are decided missing in a share at most alpha: the
// count over 200000 directories stays under the binomial's mean plus six
// standard deviations (about 1e-9 to fail on correct code). Seeded.
func TestSubtreeErrorRate(t *testing.T) {
	seed := testtools.Seed(t, "./mirror/")
	rng := rand.New(rand.NewPCG(seed, 4))
	o := SubtreeOptions{ErrorRate: 0.01, DeadRate: 0.25}
	s := NewSubtrees(o)
	const dirs = 200000
	wrong := 0
	for d := range dirs {
		for p := range 40 {
			u := fmt.Sprintf("http://h/d%d/p%d.html", d, p)
			if rng.Float64() < o.DeadRate {
				wrong += len(s.Lack(u))
			} else {
				s.Served(u)
				break // blocked for good
			}
		}
		if d%50000 == 49999 {
			s = NewSubtrees(o) // stay under the learner's bound
		}
	}
	// P(decided) = q0^n <= alpha (n = 4: 0.0039).
	p := math.Pow(o.DeadRate, float64(SubtreeEvidence(o.ErrorRate, o.DeadRate)))
	bound := dirs*p + 6*math.Sqrt(dirs*p*(1-p))
	t.Logf("n %d, decided %d of %d existing directories (expected %.0f, alpha %g)", s.Needed(), wrong, dirs, dirs*p, o.ErrorRate)
	if p > o.ErrorRate || float64(wrong) > bound {
		t.Errorf("decided %d of %d existing directories missing: above %0.f (q0^n = %g, alpha %g)", wrong, dirs, bound, p, o.ErrorRate)
	}
}

func TestDirs(t *testing.T) {
	for u, want := range map[string][]string{
		"http://h/a/b/c.html":   {"http://h/a/", "http://h/a/b/"},
		"http://h/a/b/":         {"http://h/a/", "http://h/a/b/"},
		"http://h/a/b/?x=/y/z":  {"http://h/a/", "http://h/a/b/"},
		"http://h/c.html":       nil,
		"http://h":              nil,
		"http://h:8080/m/x#f/g": {"http://h:8080/m/"},
	} {
		if got := Dirs(u); !slices.Equal(got, want) {
			t.Errorf("Dirs(%q) = %q, want %q", u, got, want)
		}
	}
}

// TestSubtreeRestoredServed: a directory an earlier run saw served is
// blocked in a resumed run whatever its answers now (its requests then are
// mostly gap probes of shared dead links, no sample of the directory).
func TestSubtreeRestoredServed(t *testing.T) {
	s := NewSubtrees(SubtreeOptions{})
	_, fresh := s.ServedNew("http://h/m/a/x.html")
	if !slices.Equal(fresh, []string{"http://h/m/", "http://h/m/a/"}) {
		t.Fatalf("fresh prefixes %q", fresh)
	}
	if _, fresh := s.ServedNew("http://h/m/a/y.html"); len(fresh) > 0 {
		t.Errorf("prefixes served before reported fresh again: %q", fresh)
	}
	r := NewSubtrees(SubtreeOptions{})
	r.RestoreServed([]string{"http://h/m/", "http://h/m/a/"})
	for i := range 3 * r.Needed() {
		if got := r.Lack(fmt.Sprintf("http://h/m/a/p%d.html", i)); len(got) > 0 {
			t.Fatalf("a directory served in an earlier run was decided missing: %+v", got)
		}
	}
	if got := r.Rules(); len(got) > 0 {
		t.Errorf("rules %+v", got)
	}
}
