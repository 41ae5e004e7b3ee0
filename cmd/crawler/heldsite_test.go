//go:build e2e

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// heldSite is a chain of n pages on one loopback address (page i at /p/i,
// linking to the next three) whose request for page hold is held until
// release is called: a test acts on the crawl's state while a worker waits
// on that page.
type heldSite struct {
	ln      net.Listener
	reached chan struct{} // closed when page hold is requested
	release func()        // lets the held request go on (once; also at cleanup)
}

// startHeldSite serves a heldSite on ip (the test is skipped if it cannot
// listen there). Once released, the held page is served like the others, or
// answers 404 with holdNotFound.
func startHeldSite(t *testing.T, ip string, n, hold int, holdNotFound bool) *heldSite {
	t.Helper()
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	site := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		if i == hold {
			once.Do(func() { close(reached) })
			<-release
			if holdNotFound {
				http.NotFound(w, r)
				return
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>Page %d</title></head><body><p>words of page %d", i, i)
		for k := i + 1; k <= i+3 && k < n; k++ {
			fmt.Fprintf(&b, ` <a href="/p/%d">next</a>`, k)
		}
		b.WriteString("</p></body></html>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String()))
	})}
	go site.Serve(ln)
	t.Cleanup(func() { site.Close() })
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	return &heldSite{ln: ln, reached: reached, release: releaseOnce}
}

// writePlainConfig writes a crawl configuration with mirror detection and
// sitemaps off to dir/name and returns its path.
func writePlainConfig(t *testing.T, dir, name string) string {
	t.Helper()
	cfg := filepath.Join(dir, name)
	if err := os.WriteFile(cfg, []byte("mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}
