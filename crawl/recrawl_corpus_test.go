//go:build e2e

package crawl_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// copyHost copies one host of the real corpus, keeping modification times
// (the server's ETag and Last-Modified come from them).
func copyHost(t *testing.T, corpus, ip, dst string) []string {
	t.Helper()
	var htmls []string
	src := filepath.Join(corpus, ip)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out := filepath.Join(dst, ip, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".html") {
			htmls = append(htmls, rel)
		}
		return os.Chtimes(out, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(htmls)
	return htmls
}

var (
	manTime = regexp.MustCompile(`Time: \d\d:\d\d:\d\d GMT, [A-Z][a-z]+ \d+, \d{4}`)
	anyTag  = regexp.MustCompile(`<[^>]*>`)
)

// TestRecrawlCorpusHost recrawls a host of the real corpus (man2html pages,
// whose footer carries the time they were made) after changing a third of
// its files on disk: half of those get a new footer time only, half a real
// edit (the second half of the body replaced by as many new words). The
// untouched pages cost a 304 each; a new footer time is trivially_changed on
// every page long enough for the threshold (8 of n looped shingles differ:
// J >= 0.90 from n = 152 words; asserted from 200 words), a real edit is
// changed.
func TestRecrawlCorpusHost(t *testing.T) {
	corpus, _ := testweb.NeedCorpus(t)
	const ip = "127.0.0.12"
	root := t.TempDir()
	htmls := copyHost(t, corpus, ip, root)
	log := &condLog{}
	web, err := loopweb.Start(root, loopweb.Options{Handler: log.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seed := web.URL(ip, "/linux/man-pages/")
	data := t.TempDir()
	crawlDir(t, data, false, seed)
	first := log.take()

	// A third of the pages change: new footer time, or a real edit.
	r := rand.New(rand.NewPCG(12, 12))
	kind := map[string]string{} // URL path -> "date" or "edit"
	for i, rel := range htmls {
		if i%3 != 0 {
			continue
		}
		path := filepath.Join(root, ip, rel)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		page := string(b)
		switch {
		case i%6 == 0 && manTime.MatchString(page):
			page = manTime.ReplaceAllString(page, "Time: 09:15:02 GMT, November 25, 2026")
			kind["/"+filepath.ToSlash(rel)] = "date"
		default:
			up := strings.ToUpper(page)
			start, end := strings.Index(up, "<BODY"), strings.LastIndex(up, "</BODY")
			if start < 0 || end < start {
				continue
			}
			mid := start + strings.LastIndex(page[start:start+(end-start)/2+1], "\n")
			n := len(strings.Fields(anyTag.ReplaceAllString(page[mid:end], " ")))
			ws := make([]string, max(n, 50))
			for k := range ws {
				ws[k] = fmt.Sprintf("edit%d", r.IntN(5000))
			}
			page = page[:mid] + "\n<P>" + strings.Join(ws, " ") + "</P>\n" + page[end:]
			kind["/"+filepath.ToSlash(rel)] = "edit"
		}
		if dir, ok := strings.CutSuffix(rel, "index.html"); ok { // also served as its directory
			kind["/"+filepath.ToSlash(dir)] = kind["/"+filepath.ToSlash(rel)]
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		later := fi.ModTime().Add(24 * time.Hour)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
	}

	crawlDir(t, data, true, seed)
	reqs := log.take()
	db, rd := openReport(t, data)
	words := map[string]int{}
	db.ForEachPage(func(p *storage.Page) error {
		words[strings.TrimPrefix(p.URL, web.BaseURL(ip))] = p.Words
		return nil
	})
	var dates, trivial, edits, untouched int
	for _, p := range rd.Pages {
		if p.Status != 200 || p.Change == "" {
			continue
		}
		path := strings.TrimPrefix(p.URL, web.BaseURL(ip))
		switch kind[path] {
		case "date":
			dates++
			if p.Change == report.ChangeTrivial {
				trivial++
			} else if p.Change != report.ChangeReal || words[path] >= 200 {
				t.Errorf("%s (%d words, new footer time): %s", path, words[path], p.Change)
			}
		case "edit":
			edits++
			if p.Change != report.ChangeReal {
				t.Errorf("%s (real edit): %s (similarity %.3f)", path, p.Change, p.ChangeSimilarity)
			}
		default:
			untouched++
			if p.Change != report.ChangeNone {
				t.Errorf("%s (untouched): %s", path, p.Change)
			}
		}
	}
	ch := rd.Changes
	t.Logf("%d pages: %d untouched, %d new footer times (%d trivially changed), %d real edits; %d requests in the first crawl, %d in the recrawl, %d answered 304",
		dates+edits+untouched, untouched, dates, trivial, edits, len(first), len(reqs), ch.NotModified)
	if dates < 20 || edits < 20 || trivial < dates/2 {
		t.Errorf("too few changes exercised: %d dates (%d trivial), %d edits", dates, trivial, edits)
	}
	if ch.NotModified != untouched || ch.ByChange[report.ChangeNew] != 0 || ch.ByChange[report.ChangeGone] != 0 || ch.ByChange[report.ChangeFailed] != 0 {
		t.Errorf("changes %+v, want %d not modified and nothing new, gone or failed", ch, untouched)
	}
	var not304 int
	for _, q := range web.Requests() {
		if q.Status == http.StatusNotModified {
			not304++
		}
	}
	if not304 != untouched {
		t.Errorf("the server answered %d requests 304, want %d (the untouched pages)", not304, untouched)
	}
	for _, q := range reqs {
		if q.path != "/robots.txt" && q.inm == "" && q.ims == "" {
			t.Errorf("revisit of %s without a validator", q.path)
		}
	}
}
