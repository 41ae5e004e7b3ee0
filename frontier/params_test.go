package frontier

import (
	"fmt"
	"slices"
	"testing"
)

// obs is one page a crawl fetched: its canonical URL and exact cluster.
type obs struct {
	url     string
	cluster uint64
}

// dupsOf returns the observations of one cluster: every URL in urls has its text.
func dupsOf(cluster uint64, urls ...string) []obs {
	out := make([]obs, len(urls))
	for i, u := range urls {
		out[i] = obs{u, cluster}
	}
	return out
}

func TestParamLearner(t *testing.T) {
	const uuid1, uuid2, uuid3, uuid4 = "0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"1b4e28ba-2fa1-11d2-883f-0016d3cca427", "6fa459ea-ee8a-3ca4-894e-db77e160355e"
	tests := []struct {
		name   string
		pages  []obs
		active []string          // "host param" of the active rules, sorted
		canon  map[string]string // Canonical(in) = out after the pages
	}{
		{
			name: "sid on two paths, three pairs",
			pages: slices.Concat(
				dupsOf(1, "http://shop/a?sid=1", "http://shop/a?sid=2", "http://shop/a?sid=3"),
				dupsOf(2, "http://shop/b?sid=4", "http://shop/b?sid=5")),
			active: []string{"shop sid"},
			canon: map[string]string{
				"http://shop/c?sid=9":      "http://shop/c",
				"http://shop/c?x=1&sid=9":  "http://shop/c?x=1",
				"http://other/c?sid=9":     "http://other/c?sid=9",
				"http://shop/c?sidx=9&x=1": "http://shop/c?sidx=9&x=1",
				"http://shop:8080/c?sid=9": "http://shop:8080/c?sid=9",
			},
		},
		{
			name: "threshold not met: two pairs",
			pages: slices.Concat(
				dupsOf(1, "http://shop/a?sid=1", "http://shop/a?sid=2"),
				dupsOf(2, "http://shop/b?sid=4", "http://shop/b?sid=5")),
			canon: map[string]string{"http://shop/c?sid=9": "http://shop/c?sid=9"},
		},
		{
			name:  "threshold not met: three pairs on one path",
			pages: dupsOf(1, "http://shop/a?s=1", "http://shop/a?s=2", "http://shop/a?s=3", "http://shop/a?s=4"),
		},
		{
			name: "threshold exactly met: pair three on the second path",
			pages: slices.Concat(
				dupsOf(1, "http://shop/a?s=1", "http://shop/a?s=2", "http://shop/a?s=3"),
				dupsOf(1, "http://shop/b?s=4", "http://shop/b?s=5")),
			active: []string{"shop s"},
		},
		{
			name: "all pages one text (the red-team shop): copies compared with each other, not only with the original",
			pages: dupsOf(7, "http://shop/", "http://shop/a?token=R1", "http://shop/b?token=R1",
				"http://shop/a?token=R2", "http://shop/b?token=R2", "http://shop/c?token=R2", "http://shop/a?token=R3"),
			active: []string{"shop token"},
		},
		{
			name: "PHPSESSID-like name, hex values, case kept",
			pages: dupsOf(1, "http://h/a?MySess=deadbeef01", "http://h/a?MySess=deadbeef02",
				"http://h/b?MySess=deadbeef03", "http://h/b?MySess=deadbeef04", "http://h/b?MySess=deadbeef05"),
			active: []string{"h MySess"},
			canon: map[string]string{
				"http://h/z?MySess=ff&q=1": "http://h/z?q=1",
				"http://h/z?mysess=ff":     "http://h/z?mysess=ff",
			},
		},
		{
			name: "uuid values, utm_source",
			pages: dupsOf(3, "http://h/a?utm_source="+uuid1, "http://h/a?utm_source="+uuid2,
				"http://h/b?utm_source="+uuid3, "http://h/b?utm_source="+uuid4, "http://h/a?utm_source="+uuid3),
			active: []string{"h utm_source"},
		},
		{
			name:   "path parameter ;visit",
			pages:  dupsOf(1, "http://h/a;visit=11", "http://h/a;visit=12", "http://h/b;visit=13", "http://h/b;visit=14", "http://h/b;visit=15"),
			active: []string{"h ;visit"},
			canon: map[string]string{
				"http://h/c;visit=99?x=1": "http://h/c?x=1",
				"http://h/c;v=1;visit=99": "http://h/c;v=1",
				"http://h/c?visit=99":     "http://h/c?visit=99",
				"http://h/d;visit=1/e":    "http://h/d/e",
			},
		},
		{
			name: "other parameters in different orders",
			pages: dupsOf(1, "http://h/a?x=1&y=2&s=r1", "http://h/a?s=r2&y=2&x=1", "http://h/a?y=2&s=r3&x=1",
				"http://h/b?s=r4&q=z", "http://h/b?q=z&s=r5"),
			active: []string{"h s"},
			canon:  map[string]string{"http://h/a?y=2&s=r9&x=1": "http://h/a?y=2&x=1"},
		},
		{
			name: "two parameters varying at once prove nothing",
			pages: dupsOf(1, "http://h/a?s=1&t=1", "http://h/a?s=2&t=2", "http://h/a?s=3&t=3",
				"http://h/b?s=4&t=4", "http://h/b?s=5&t=5"),
		},
		{
			name: "different other parameters are different skeletons, not pairs",
			pages: dupsOf(1, "http://h/a?s=1&p=1", "http://h/a?s=2&p=2", "http://h/a?s=3&p=3",
				"http://h/a?s=4&p=4"),
		},
		{
			name: "meaningful parameter beside a session id: only the session id is learned",
			pages: []obs{
				{"http://h/list?page=1&s=r1", 1}, {"http://h/list?page=2&s=r1", 2}, {"http://h/list?page=3&s=r1", 3},
				{"http://h/list?page=1&s=r2", 1}, {"http://h/list?page=2&s=r2", 2}, {"http://h/list?page=3&s=r3", 3},
			},
			active: []string{"h s"},
			canon:  map[string]string{"http://h/list?page=4&s=r7": "http://h/list?page=4"},
		},
		{
			name: "counter-evidence first prevents the rule",
			pages: slices.Concat(
				[]obs{{"http://h/p?id=1", 10}, {"http://h/p?id=2", 11}},
				dupsOf(1, "http://h/a?id=1", "http://h/a?id=2", "http://h/a?id=3", "http://h/b?id=4", "http://h/b?id=5")),
		},
		{
			name: "counter-evidence after the decision withdraws it",
			pages: slices.Concat(
				dupsOf(1, "http://h/a?id=1", "http://h/a?id=2", "http://h/a?id=3", "http://h/b?id=4", "http://h/b?id=5"),
				[]obs{{"http://h/p?id=1", 10}, {"http://h/p?id=2", 11}}),
			canon: map[string]string{"http://h/c?id=9": "http://h/c?id=9"},
		},
		{
			name: "presence is counter-evidence only",
			pages: slices.Concat(
				// "/x" and "/x?page=1" hold the same text on three pages...
				dupsOf(1, "http://h/x", "http://h/x?page=1"), dupsOf(2, "http://h/y", "http://h/y?page=1"),
				dupsOf(3, "http://h/z", "http://h/z?page=1")),
		},
		{
			name: "absent twin with other text blocks the rule (twin fetched first)",
			pages: slices.Concat(
				[]obs{{"http://h/list", 20}, {"http://h/list?page=2", 21}},
				dupsOf(1, "http://h/a?page=98", "http://h/a?page=99", "http://h/a?page=100", "http://h/b?page=98", "http://h/b?page=99")),
		},
		{
			name: "absent twin with other text blocks the rule (twin fetched last)",
			pages: slices.Concat(
				[]obs{{"http://h/list?page=2", 21}, {"http://h/list", 20}},
				dupsOf(1, "http://h/a?page=98", "http://h/a?page=99", "http://h/a?page=100", "http://h/b?page=98", "http://h/b?page=99")),
		},
		{
			name: "hosts do not affect each other",
			pages: slices.Concat(
				dupsOf(1, "http://one/a?s=1", "http://one/a?s=2", "http://one/a?s=3", "http://one/b?s=4", "http://one/b?s=5"),
				[]obs{{"http://two/a?s=1", 10}, {"http://two/a?s=2", 11}},
				dupsOf(2, "http://two/c?s=1", "http://two/c?s=2")),
			active: []string{"one s"},
			canon: map[string]string{
				"http://one/z?s=1": "http://one/z",
				"http://two/z?s=1": "http://two/z?s=1",
			},
		},
		{
			name: "counter-evidence on another host does not block",
			pages: slices.Concat(
				[]obs{{"http://two/a?s=1", 10}, {"http://two/a?s=2", 11}},
				dupsOf(1, "http://one/a?s=1", "http://one/a?s=2", "http://one/a?s=3", "http://one/b?s=4", "http://one/b?s=5")),
			active: []string{"one s"},
		},
		{
			name:  "the same URL observed again is no evidence",
			pages: dupsOf(1, "http://h/a?s=1", "http://h/a?s=1", "http://h/a?s=1", "http://h/b?s=2", "http://h/b?s=2"),
		},
		{
			name: "a refetched page whose text changed is no counter-evidence against itself",
			pages: slices.Concat(
				[]obs{{"http://h/a?s=1", 5}, {"http://h/a?s=1", 6}},
				dupsOf(1, "http://h/c?s=1", "http://h/c?s=2", "http://h/c?s=3", "http://h/d?s=4", "http://h/d?s=5")),
			active: []string{"h s"},
		},
		{
			name: "two rules on one host",
			pages: dupsOf(1, "http://h/a?s=1&t=1", "http://h/a?s=2&t=1", "http://h/a?s=3&t=1", "http://h/b?s=4&t=1",
				"http://h/b?s=5&t=1", "http://h/c?t=1", "http://h/c?t=2", "http://h/c?t=3", "http://h/d?t=4", "http://h/d?t=5"),
			active: []string{"h s", "h t"},
			canon:  map[string]string{"http://h/z?t=1&q=1&s=2": "http://h/z?q=1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewParamLearner(ParamOptions{})
			for _, p := range tt.pages {
				l.Observe(p.url, p.cluster, nil)
			}
			var active []string
			for _, r := range l.Rules() {
				if r.Active() {
					active = append(active, r.Key())
				}
			}
			if !slices.Equal(active, tt.active) {
				t.Errorf("active rules %q, want %q\nrules: %+v", active, tt.active, l.Rules())
			}
			for in, want := range tt.canon {
				got := l.Canonical(in)
				if got != want {
					t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
				}
				if again := l.Canonical(got); again != got {
					t.Errorf("Canonical not idempotent: %q -> %q -> %q", in, got, again)
				}
				if c, err := Canonicalize(got, nil); err != nil || c != got {
					t.Errorf("Canonical(%q) = %q is not canonical: %q, %v", in, got, c, err)
				}
			}
		})
	}
}

// TestParamLearnerReports checks what Observe returns (what a store must keep) and
// that the evidence of a rule names real pairs.
func TestParamLearnerReports(t *testing.T) {
	l := NewParamLearner(ParamOptions{})
	var changed []ParamRule
	for _, u := range []string{"http://h/a?s=1", "http://h/a?s=2", "http://h/a?s=3", "http://h/b?s=4", "http://h/b?s=5"} {
		if c := l.Observe(u, 1, nil); len(c) > 0 {
			if u != "http://h/b?s=5" {
				t.Errorf("Observe(%q) reported %+v before the threshold", u, c)
			}
			changed = append(changed, c...)
		}
	}
	if len(changed) != 1 {
		t.Fatalf("want one decided rule, got %+v", changed)
	}
	r := changed[0]
	if !r.Active() || r.Host != "h" || r.Param != "s" || r.Pairs != 3 || r.Paths != 2 {
		t.Errorf("rule %+v", r)
	}
	want := []ParamPair{{"http://h/a?s=2", "http://h/a?s=1"}, {"http://h/a?s=3", "http://h/a?s=1"}, {"http://h/b?s=5", "http://h/b?s=4"}}
	if !slices.Equal(r.Examples, want) {
		t.Errorf("examples %+v, want %+v", r.Examples, want)
	}
	// More evidence after the decision is not news.
	if c := l.Observe("http://h/b?s=6", 1, nil); len(c) != 0 {
		t.Errorf("evidence after the decision reported %+v", c)
	}
	// Counter-evidence withdraws, once.
	l.Observe("http://h/p?s=1", 10, nil)
	c := l.Observe("http://h/p?s=2", 11, nil)
	if len(c) != 1 || !c[0].Withdrawn || c[0].Counter == nil || c[0].Active() {
		t.Fatalf("counter-evidence reported %+v", c)
	}
	if c := l.Observe("http://h/p?s=3", 12, nil); len(c) != 0 {
		t.Errorf("second counter-evidence reported %+v", c)
	}
	if got := l.Canonical("http://h/x?s=1"); got != "http://h/x?s=1" {
		t.Errorf("withdrawn rule still strips: %q", got)
	}
}

func TestParamLearnerRestore(t *testing.T) {
	l := NewParamLearner(ParamOptions{})
	l.Restore([]ParamRule{
		{Host: "h", Param: "visit", Decided: true, Pairs: 3, Paths: 2},
		{Host: "h", Param: "page", Counter: &ParamPair{"http://h/?page=1", "http://h/?page=2"}},
		{Host: "h", Param: "old", Decided: true, Withdrawn: true},
	})
	if got := l.Canonical("http://h/a?page=2&visit=9&old=1"); got != "http://h/a?page=2&old=1" {
		t.Errorf("Canonical after Restore = %q", got)
	}
	// A dropped path parameter that leaves a dot segment is resolved, and
	// Canonical stays idempotent.
	l.Restore([]ParamRule{{Host: "h", Param: ";v", Decided: true, Pairs: 3, Paths: 2}})
	for in, want := range map[string]string{
		"http://h/a/..;v=1/b":       "http://h/b",
		"http://h/a/%2E%2E;v=7/b?x": "http://h/b?x",
		"http://h/a/.;v=1/b":        "http://h/a/b",
	} {
		got := l.Canonical(in)
		if got != want || l.Canonical(got) != got {
			t.Errorf("Canonical(%q) = %q (again: %q), want %q", in, got, l.Canonical(got), want)
		}
	}
	// A blocked rule stays blocked whatever the evidence.
	for i := range 6 {
		l.Observe(fmt.Sprintf("http://h/%c?page=%d", 'a'+i%2, i), 1, nil)
	}
	if got := l.Canonical("http://h/a?page=2"); got != "http://h/a?page=2" {
		t.Errorf("blocked rule decided: %q", got)
	}
}

// TestParamLearnerGenerations checks that memory is bounded and that a trap is still
// caught after the remembered skeletons were recycled.
func TestParamLearnerGenerations(t *testing.T) {
	l := NewParamLearner(ParamOptions{MaxEntries: 100})
	for i := range 1000 {
		l.Observe(fmt.Sprintf("http://h/page%d?x=%d", i, i), uint64(100+i), nil)
	}
	if n := l.cur.size() + l.old.size(); n > 100 {
		t.Errorf("%d entries remembered, want at most 100", n)
	}
	for _, u := range []string{"http://h/a?s=1", "http://h/a?s=2", "http://h/a?s=3", "http://h/b?s=4", "http://h/b?s=5"} {
		l.Observe(u, 1, nil)
	}
	if got := l.Canonical("http://h/c?s=1"); got != "http://h/c" {
		t.Errorf("trap after recycling not learned: %q", got)
	}
}

// TestParamLearnerBoundsNames: a host whose pages carry a new parameter name
// each does not grow the learner without bound (nor the rules it reports), and
// a host within the bounds still learns.
func TestParamLearnerBoundsNames(t *testing.T) {
	l := NewParamLearner(ParamOptions{})
	for i := range 5000 {
		// Same text under two values of a fresh name: evidence for it.
		l.Observe(fmt.Sprintf("http://h/p?n%d=1", i), 7, nil)
		l.Observe(fmt.Sprintf("http://h/p?n%d=2", i), 7, nil)
		// Different text: counter-evidence for another fresh name.
		l.Observe(fmt.Sprintf("http://h/q?c%d=1", i), uint64(100+2*i), nil)
		l.Observe(fmt.Sprintf("http://h/q?c%d=2", i), uint64(101+2*i), nil)
	}
	l.mu.RLock()
	n := len(l.cands)
	l.mu.RUnlock()
	if n > paramMaxPerHost {
		t.Errorf("%d parameters tracked for one host, want at most %d", n, paramMaxPerHost)
	}
	for i := range 6 {
		l.Observe(fmt.Sprintf("http://other/%c?visit=%d", 'a'+i%2, i), 9, nil)
	}
	if got := l.Canonical("http://other/a?visit=5"); got != "http://other/a" {
		t.Errorf("another host did not learn within the bounds: %q", got)
	}
}

// Merge takes another learner's rule only when it says more than this one's:
// a decision over evidence, a withdrawal or block over a decision; never the
// other way (a rule decided here and not stored yet is kept).
func TestParamLearnerMerge(t *testing.T) {
	const u = "http://shop.example/a?visit=7&item=3"
	rule := func(param string, decided, withdrawn bool) ParamRule {
		r := ParamRule{Host: "shop.example", Param: param, Pairs: 3, Paths: 2, Decided: decided, Withdrawn: withdrawn}
		if withdrawn {
			r.Counter = &ParamPair{URL: "http://shop.example/a?visit=1", Other: "http://shop.example/a?visit=2"}
		}
		return r
	}
	l := NewParamLearner(ParamOptions{})
	if n := l.Merge([]ParamRule{rule("visit", true, false)}); n != 1 || l.Canonical(u) != "http://shop.example/a?item=3" {
		t.Fatalf("a decided rule merged into an empty learner: %d replaced, %s", n, l.Canonical(u))
	}
	if n := l.Merge([]ParamRule{rule("visit", false, false)}); n != 0 || l.Canonical(u) != "http://shop.example/a?item=3" {
		t.Errorf("evidence only replaced a decision: %d replaced, %s", n, l.Canonical(u))
	}
	if n := l.Merge([]ParamRule{rule("visit", true, true)}); n != 1 || l.Canonical(u) != u {
		t.Errorf("a withdrawal not merged: %d replaced, %s", n, l.Canonical(u))
	}
	if n := l.Merge([]ParamRule{rule("visit", true, false)}); n != 0 || l.Canonical(u) != u {
		t.Errorf("a decision replaced a withdrawal: %d replaced, %s", n, l.Canonical(u))
	}
}
