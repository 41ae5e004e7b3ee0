package mirror

import (
	"fmt"
	"testing"
)

func TestInfer(t *testing.T) {
	cases := []struct {
		name, dup, orig string
		want            Mapping
		ok              bool
	}{
		{"different prefixes, index.html vs dir", "http://h3/pgsql/15.18/index.html", "http://h2/docs/15/",
			Mapping{FromOrigin: "http://h3", FromPrefix: "/pgsql/15.18/", ToOrigin: "http://h2", ToPrefix: "/docs/15/"}, true},
		{"same prefix across hosts", "http://h9/", "http://h8/", Mapping{FromOrigin: "http://h9", FromPrefix: "/", ToOrigin: "http://h8", ToPrefix: "/"}, true},
		{"deeper on one side", "http://m/linux/man-pages/man1/ls.1.html", "http://o/man/man1/ls.1.html",
			Mapping{FromOrigin: "http://m", FromPrefix: "/linux/man-pages/", ToOrigin: "http://o", ToPrefix: "/man/"}, true},
		{"same host translations", "http://h/manual/pt-br/mod/core.html", "http://h/manual/en/mod/core.html",
			Mapping{FromOrigin: "http://h", FromPrefix: "/manual/pt-br/", ToOrigin: "http://h", ToPrefix: "/manual/en/"}, true},
		{"different file names share nothing", "http://h/a/x.html", "http://h/b/y.html", Mapping{}, false},
		{"ports kept in origin", "http://h:81/a/p.html", "http://h:80/b/p.html", Mapping{FromOrigin: "http://h:81", FromPrefix: "/a/", ToOrigin: "http://h:80", ToPrefix: "/b/"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Infer(tc.dup, tc.orig)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Infer = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestApply(t *testing.T) {
	m := Mapping{FromOrigin: "http://h3", FromPrefix: "/pgsql/15.18/", ToOrigin: "http://h2", ToPrefix: "/docs/15/"}
	cases := map[string]string{
		"http://h3/pgsql/15.18/sql.html":     "http://h2/docs/15/sql.html",
		"http://h3/pgsql/15.18/a/b.html?x=1": "http://h2/docs/15/a/b.html?x=1",
		"http://h3/pgsql/15.18":              "http://h2/docs/15",
		"http://h3/pgsql/15.18/":             "http://h2/docs/15/",
		"http://h3/other/x.html":             "",
		"http://h4/pgsql/15.18/sql.html":     "",
		"http://h3/pgsql/15.180/trap.html":   "",
	}
	for in, want := range cases {
		got, ok := m.Apply(in)
		if (want == "") == ok || got != want {
			t.Errorf("Apply(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if !(Mapping{FromOrigin: "http://a", FromPrefix: "/x/", ToOrigin: "http://a", ToPrefix: "/x/"}).Identity() || m.SameHost() {
		t.Error("Identity/SameHost wrong")
	}
}

// TestExtensionless: a copy that serves its pages without their extension
// ("a" for "a.html", either side) maps file names across; directories and
// names with another extension stay as they are.
func TestExtensionless(t *testing.T) {
	cases := []struct {
		name, dup, orig string
		want            Mapping
	}{
		{"copy extensionless", "http://m/mirror/cli/npm-ls", "http://o/npm/cli/npm-ls.html",
			Mapping{FromOrigin: "http://m", FromPrefix: "/mirror/", ToOrigin: "http://o", ToPrefix: "/npm/", ToExt: ".html"}},
		{"original extensionless", "http://m/docs/sql.htm", "http://o/docs/sql",
			Mapping{FromOrigin: "http://m", FromPrefix: "/", ToOrigin: "http://o", ToPrefix: "/", FromExt: ".htm"}},
	}
	for _, tc := range cases {
		got, ok := Infer(tc.dup, tc.orig)
		if !ok || got != tc.want {
			t.Fatalf("%s: Infer = %+v, %v; want %+v", tc.name, got, ok, tc.want)
		}
	}
	copyLess := cases[0].want
	for in, want := range map[string]string{
		"http://m/mirror/cli/npm-run":      "http://o/npm/cli/npm-run.html",
		"http://m/mirror/cli/npm-run?x=1":  "http://o/npm/cli/npm-run.html?x=1",
		"http://m/mirror/cli/":             "http://o/npm/cli/",
		"http://m/mirror/":                 "http://o/npm/",
		"http://m/mirror/img/logo.png":     "http://o/npm/img/logo.png",
		"http://m/mirror/cli/npm-run.html": "http://o/npm/cli/npm-run.html",
	} {
		if got, ok := copyLess.Apply(in); !ok || got != want {
			t.Errorf("Apply(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	withExt := Mapping{FromOrigin: "http://o", FromPrefix: "/npm/", ToOrigin: "http://m", ToPrefix: "/mirror/", FromExt: ".html"}
	for in, want := range map[string]string{
		"http://o/npm/cli/npm-run.html": "http://m/mirror/cli/npm-run",
		"http://o/npm/cli/":             "http://m/mirror/cli/",
		"http://o/npm/img/logo.png":     "http://m/mirror/img/logo.png",
	} {
		if got, ok := withExt.Apply(in); !ok || got != want {
			t.Errorf("reverse Apply(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	// Both directions of one candidate, and its key, agree.
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://m/mirror/cli/npm-ls", "http://o/npm/cli/npm-ls.html")
	if key == "" || key != Key(copyLess) {
		t.Fatalf("candidate key %q, want %q", key, Key(copyLess))
	}
	cps := d.Counterparts("http://o/npm/cli/npm-run.html")
	if len(cps) != 1 || cps[0].URL != "http://m/mirror/cli/npm-run" {
		t.Fatalf("Counterparts from the original: %+v", cps)
	}
	cps = d.Counterparts("http://m/mirror/cli/npm-run")
	if len(cps) != 1 || cps[0].URL != "http://o/npm/cli/npm-run.html" {
		t.Fatalf("Counterparts from the copy: %+v", cps)
	}
	// A candidate proposed by index pages first (no file names to tell
	// extensions by) learns them from its first pair of files.
	d = NewDetector(DefaultOptions())
	key = d.Propose("http://m/mirror/", "http://o/npm/index.html")
	if cps := d.Counterparts("http://m/mirror/cli/npm-run"); len(cps) != 1 || cps[0].URL != "http://o/npm/cli/npm-run" {
		t.Fatalf("before a pair of files: %+v", cps)
	}
	if k := d.Propose("http://m/mirror/cli/npm-ls", "http://o/npm/cli/npm-ls.html"); k != key {
		t.Fatalf("the pair of files proposed %q, want the index pair's candidate %q", k, key)
	}
	if cps := d.Counterparts("http://m/mirror/cli/npm-run"); len(cps) != 1 || cps[0].URL != "http://o/npm/cli/npm-run.html" {
		t.Fatalf("after a pair of files: %+v", cps)
	}
	// ...and keeps them: a later pair of files does not change them.
	d.Propose("http://m/mirror/x.html", "http://o/npm/x.html")
	if c, _ := d.Candidate(key); !c.Files || c.BExt != ".html" || c.AExt != "" {
		t.Fatalf("candidate after more pairs: %+v", c)
	}
}

func TestExtAlternates(t *testing.T) {
	for in, want := range map[string][]string{
		"http://h/a/npm-ls":      {"http://h/a/npm-ls.html", "http://h/a/npm-ls.htm"},
		"http://h/a/npm-ls.html": {"http://h/a/npm-ls"},
		"http://h/a/npm-ls.htm":  {"http://h/a/npm-ls"},
		"http://h/a/npm-ls?x=1":  {"http://h/a/npm-ls.html?x=1", "http://h/a/npm-ls.htm?x=1"},
		"http://h/a/":            nil,
		"http://h/a/logo.png":    nil,
	} {
		got := ExtAlternates(in)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ExtAlternates(%s) = %v, want %v", in, got, want)
		}
	}
}
