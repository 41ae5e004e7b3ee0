package session_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// siteOn serves a three-page site on ip (a loopback address of its own, so
// a host of its own for the scope) and logs the paths requested.
func siteOn(t *testing.T, ip string, robots func()) (root string, log func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	var mu sync.Mutex
	var paths []string
	pages := map[string]string{"/": `<a href="/a">a</a> <a href="/b">b</a>`, "/a": `<a href="/">home</a>`, "/b": `<a href="/a">a</a>`}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/robots.txt" && robots != nil {
			robots()
		}
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>%s%s</title></head><body><p>page %s of %s %s</p></body></html>", ip, r.URL.Path, r.URL.Path, ip, p)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// TestAddSeedsWhileRunning: seeds added to a paused crawl are stored with
// the crawl's seeds and crawled after Resume with the pages they link to;
// a seed that is not a URL, or that crawl.deny excludes, is refused and
// nothing of the request is stored or queued.
func TestAddSeedsWhileRunning(t *testing.T) {
	a, _ := siteOn(t, "127.0.0.1", nil)
	b, bLog := siteOn(t, "127.0.0.2", nil)
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	cfg.Crawl.Deny = []string{`/private/`}
	s := open(t, dir, cfg, a)
	c, err := s.Start(cfg, crawl.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Frontier.Pause()
	done := make(chan error, 1)
	go func() { done <- c.Engine.Run(context.Background(), context.Background()) }()

	var ue *session.UsageError
	if _, _, err := s.AddSeeds([]string{b, "mailto:x@example.com"}); !errors.As(err, &ue) {
		t.Errorf("a seed that is not a URL: %v, want a *session.UsageError", err)
	}
	var se *crawl.SeedError
	if _, _, err := s.AddSeeds([]string{b, b + "private/x"}); !errors.As(err, &se) {
		t.Errorf("a denied seed: %v, want a *crawl.SeedError", err)
	}
	if stored, _ := s.DB.Seeds(); len(stored) != 1 {
		t.Fatalf("refused requests stored seeds: %v", stored)
	}
	seeds, added, err := s.AddSeeds([]string{b, a})
	if err != nil || added != 1 || !slices.Equal(seeds, []string{b, a}) {
		t.Fatalf("AddSeeds: %v, %d added, %v; want both canonical, 1 new", seeds, added, err)
	}
	if stored, _ := s.DB.Seeds(); !slices.Equal(stored, []string{a, b}) {
		t.Errorf("stored seeds %v, want %v", stored, []string{a, b})
	}
	time.Sleep(200 * time.Millisecond)
	if got := bLog(); len(got) != 0 {
		t.Fatalf("paused, yet requested %v", got)
	}
	c.Frontier.Resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("crawl did not finish")
	}
	got := bLog()
	for _, p := range []string{"/", "/a", "/b"} {
		if !slices.Contains(got, p) {
			t.Errorf("added site: %s not requested (%v)", p, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStoresRequests: a robots.txt fetched after the last page (the
// crawl stopped before the page it was fetched for) is in the stored
// request count, which the report shows, as it is in the running crawl's.
func TestCloseStoresRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, log := siteOn(t, "127.0.0.1", cancel) // stop as robots.txt is asked for
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	s := open(t, dir, cfg, root)
	c, err := s.Start(cfg, crawl.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Engine.Run(ctx, context.Background()); err != nil {
		t.Fatal(err)
	}
	running := c.Engine.Snapshot().Requests
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := log(); !slices.Equal(got, []string{"/robots.txt"}) || running != 1 {
		t.Fatalf("requests %v, counted %d: want robots.txt only", got, running)
	}
	if m := meta(t, dir, storage.MetaRequests); m[storage.MetaRequests] != "1" {
		t.Errorf("stored request count %q, want 1", m[storage.MetaRequests])
	}
}
