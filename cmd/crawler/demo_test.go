package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// TestDemo runs what `make demo` runs, on the demo web the project ships in
// testdata/demo, without ../shared.
func TestDemo(t *testing.T) {
	t.Setenv("HORSESHOE_SHARED", filepath.Join(t.TempDir(), "no-shared-here"))
	web := filepath.Join("..", "..", "testdata", "demo")
	data := filepath.Join(t.TempDir(), "data")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"demo", "--web", web, "--data", data}, &out, &errOut); err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"HORSESHOE CRAWL REPORT", "exact_duplicate", "near_duplicate", "crawl finished"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", jsonPath}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var d report.Data
	b, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Stats.ByClass["exact_duplicate"] < 2 || d.Stats.ByClass["near_duplicate"] < 1 {
		t.Errorf("planted duplicates not found: %v", d.Stats.ByClass)
	}
	// The partial copy (it lacks glossary.html) is the mirror, whichever
	// host the crawl met first (issue 31; the orders are forced in
	// crawl's TestMirrorDirectionEveryOrder).
	for _, m := range d.Mirrors {
		if !strings.HasPrefix(m.Host, "127.0.0.3:") || !strings.HasPrefix(m.MirrorOf, "127.0.0.2:") {
			t.Errorf("mirror %s%s -> %s%s (%s): the guide on 127.0.0.2 is the original", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix, m.Direction())
		}
	}
	// No content lost: every distinct guide page's title is the title of a
	// page kept as unique (on the original or its mirror, whichever came first).
	kept := map[string]bool{}
	for _, p := range d.Pages {
		if p.Class == "unique" {
			kept[p.Title] = true
		}
	}
	names := []string{"history", "anatomy", "tools", "forging", "fitting", "materials", "care", "game", "rules",
		"court", "pitching", "scoring", "glossary"}
	for _, n := range names {
		path := filepath.Join(web, "127.0.0.2", "guide", n+".html")
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse("http://127.0.0.2/guide/" + n + ".html")
		doc, err := parse.Parse(body, u, parse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !kept[doc.Title] {
			t.Errorf("content of %s.html (%q) was not kept", n, doc.Title)
		}
	}
	// Every page of the demo web is accounted for exactly once in the report.
	seen := map[string]int{}
	for _, p := range d.Pages {
		seen[p.URL]++
	}
	for u, n := range seen {
		if n > 1 {
			t.Errorf("%s appears %d times in the report", u, n)
		}
	}
}
