package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCrawlSitemapsOption: the crawler follows the sitemap robots.txt names
// by default, and not with crawl.sitemaps: false in the config file.
func TestCrawlSitemapsOption(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.85:0")
	if err != nil {
		t.Skip(err)
	}
	base := "http://" + ln.Addr().String()
	pages := map[string]string{
		"/robots.txt":  "User-agent: *\nAllow: /\nSitemap: " + base + "/sitemap.xml\n",
		"/":            "<html><head><title>home</title></head><body><p>a home page that links nowhere</p></body></html>",
		"/sitemap.xml": `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>` + base + `/only</loc><lastmod>2025-01-02</lastmod></url></urlset>`,
		"/only":        "<html><head><title>only</title></head><body><p>listed in the sitemap and nowhere else</p></body></html>",
	}
	var mu sync.Mutex
	hits := map[string]int{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".xml") {
			w.Header().Set("Content-Type", "application/xml")
		}
		w.Write([]byte(body))
	})}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})

	// resume: the first run stops (--max-pages 1) with the sitemap queued
	// and not fetched; the second fetches it as a sitemap, not as a page.
	for _, c := range []struct {
		name, config string
		resume       bool
		want         bool
	}{{"default", "", false, true}, {"off", "crawl:\n  sitemaps: false\n", false, false}, {"resume", "", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			clear(hits)
			mu.Unlock()
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			args := []string{"crawl", "--data", data, "--delay", "0", "--quiet"}
			if c.config != "" {
				cfg := filepath.Join(dir, "config.yaml")
				if err := os.WriteFile(cfg, []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", cfg)
			}
			var so, se bytes.Buffer
			if c.resume {
				if err := run(context.Background(), append(args, "--max-pages", "1", base+"/"), &so, &se); err != nil {
					t.Fatalf("crawl: %v\n%s", err, se.String())
				}
				mu.Lock()
				n := hits["/sitemap.xml"]
				mu.Unlock()
				if n != 0 {
					t.Fatalf("the first run fetched the sitemap (%d): nothing left to resume", n)
				}
			}
			if err := run(context.Background(), append(args, base+"/"), &so, &se); err != nil {
				t.Fatalf("crawl: %v\n%s", err, se.String())
			}
			mu.Lock()
			if n := hits["/sitemap.xml"]; n > 1 {
				t.Errorf("sitemap requested %d times", n)
			}
			mu.Unlock()
			so.Reset()
			if err := run(context.Background(), []string{"report", "--data", data, "--format", "json"}, &so, &se); err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Pages []struct{ URL, Class string }   `json:"pages"`
				Notes []struct{ Kind, Detail string } `json:"host_notes"`
			}
			if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range rep.Pages {
				got[p.URL] = p.Class
			}
			if (got[base+"/only"] == "unique") != c.want || (got[base+"/sitemap.xml"] == "not_html") != c.want {
				t.Errorf("pages %v; want the sitemap and its page: %v", got, c.want)
			}
			notes := 0
			for _, n := range rep.Notes {
				if n.Kind == "sitemaps" && n.Detail == "sitemap files 1, URLs listed 1, queued 1" {
					notes++
				}
			}
			if (notes == 1) != c.want {
				t.Errorf("host notes %+v; want the sitemap's: %v", rep.Notes, c.want)
			}
		})
	}
}
