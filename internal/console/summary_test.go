package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestSummaryCanonicalHints: the closing lines of a crawl whose site names
// its pages canonical count the requests the hints saved.
func TestSummaryCanonicalHints(t *testing.T) {
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "index.html")
		if path != "/" {
			path = strings.TrimSuffix(path, "/")
		}
		var links string
		switch path {
		case "/":
			links = `<a href="/index.html">i</a><a href="/a">a</a>`
		case "/a":
			links = `<a href="/a/">a/</a><a href="/a/index.html">ai</a>`
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><link rel="canonical" href="%s%s"></head><body><p>`, base, path)
		for i := 0; i < 30; i++ {
			fmt.Fprintf(w, "page%s word%d ", path, i)
		}
		fmt.Fprintf(w, "</p>%s</body></html>", links)
	}))
	defer srv.Close()
	base = srv.URL

	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	seeds := []string{base + "/"}
	c, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Engine.Seed(seeds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang bound
	defer cancel()
	if err := c.Engine.Run(ctx, ctx); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	WriteSummary(&out, c, false, time.Second, "DIR")
	// /index.html is the host's check (fetched, a duplicate of /); /a/ and
	// /a/index.html are held on /a.
	if want := "canonical hints: 2 requests saved, 0 withdrawn, 0 of 1 claims wrong, 0 hosts distrusted\n"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
}
