//go:build e2e

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
)

// TestMirrorChainShared: a page skipped waiting on a counterpart that a
// decided mirror then skips at lease time is fetched after all, in one
// process and in a shared crawl (testweb.MirrorChain; the corpus lost git's
// latest/technical/api-merge.html this way). Before the fix both crawls
// left it mirror_skipped in favour of the skipped page.
func TestMirrorChainShared(t *testing.T) {
	t.Parallel() // its own web and Redis
	chain, web, seeds, err := testweb.StartMirrorChain(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	tmp := t.TempDir()
	single := filepath.Join(tmp, "single")
	var so, se bytes.Buffer
	if err := run(context.Background(), crawlArgs(single, seeds), &so, &se); err != nil {
		t.Fatalf("one process: %v\n%s", err, se.String())
	}
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	shared, _ := crawlWorkersAtOnce(t, tmp, 1, seeds, srv.URL(), "chain")
	lost, mx := web.URL(chain.Other.IP, chain.Lost), web.URL(chain.Mirror.IP, chain.Mirror.Path+"x.html")
	for _, c := range []struct {
		name string
		dirs []string
	}{{"one process", []string{single}}, {"shared", shared}} {
		d := mergedReportOf(t, c.dirs...)
		pages := pagesByURL(&d)
		if p := pages[mx]; p.Class != "mirror_skipped" {
			t.Errorf("%s: %s is %q, want mirror_skipped (the chain this test is about); mirrors %+v", c.name, mx, p.Class, d.Mirrors)
		}
		if p := pages[lost]; p.Class != "unique" {
			t.Errorf("%s: %s is %q (in favour of %q): its content is in no kept page", c.name, lost, p.Class, p.DuplicateOf)
		}
	}
}
