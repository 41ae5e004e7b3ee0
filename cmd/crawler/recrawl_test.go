package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// TestCrawlRecrawlFlag: 'crawler crawl --recrawl --data DIR' without seeds
// revisits the stored crawl (its stored seeds) and 'report --format json'
// has the changes: the untouched pages unchanged, the edited one changed.
func TestCrawlRecrawlFlag(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "127.0.0.2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(name, body string, mod time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("<!doctype html><html><body>"+body+"</body></html>"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", `<p>Index of the site.</p><a href="a.html">a</a> <a href="b.html">b</a>`, t0)
	write("a.html", "<p>The first page says one thing.</p>", t0)
	write("b.html", "<p>The second page says another.</p>", t0)
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	data := filepath.Join(t.TempDir(), "data")
	crawlArgs := []string{"crawl", "--data", data, "--delay", "0", "--quiet", "--allow-private-networks"}
	var so, se bytes.Buffer
	if err := run(context.Background(), append(crawlArgs, web.URL("127.0.0.2", "/index.html")), &so, &se); err != nil {
		t.Fatalf("crawl: %v\n%s", err, se.String())
	}
	write("b.html", "<p>The second page now says something else entirely.</p>", t0.Add(time.Minute))
	if err := run(context.Background(), append(crawlArgs, "--recrawl"), &so, &se); err != nil {
		t.Fatalf("crawl --recrawl: %v\n%s", err, se.String())
	}
	so.Reset()
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json"}, &so, &se); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Changes *struct {
			Round       int            `json:"round"`
			ByChange    map[string]int `json:"by_change"`
			NotModified int            `json:"not_modified"`
		} `json:"changes"`
		Pages []struct{ URL, Change string } `json:"pages"`
	}
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range rep.Pages {
		got[p.URL[strings.LastIndex(p.URL, "/")+1:]] = p.Change
	}
	if rep.Changes == nil || rep.Changes.Round != 1 || rep.Changes.NotModified != 2 ||
		fmt.Sprint(got) != "map[a.html:unchanged b.html:changed index.html:unchanged]" {
		t.Errorf("changes %+v, pages %v", rep.Changes, got)
	}

	// A shared crawl's pages are in its workers' data dirs: no recrawl.
	err = run(context.Background(), []string{"crawl", "--recrawl", "--redis", "redis://127.0.0.1:1/0", "--crawl", "x", "--data", t.TempDir()}, &so, &se)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--recrawl") {
		t.Errorf("--recrawl with --redis: %v, want a usage error naming --recrawl", err)
	}
}
