package crawl_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func TestAliasKey(t *testing.T) {
	tests := []struct{ a, b string }{
		{"http://example.com/a", "https://example.com/a"},
		{"http://www.example.com/a", "http://example.com/a"},
		{"http://Example.COM:80/a", "https://example.com:443/a"},
		{"http://example.com/dir/index.html", "http://example.com/dir/"},
		{"http://example.com/dir/index.htm", "http://example.com/dir"},
		{"http://example.com/dir/Default.aspx", "http://example.com/dir/"},
		{"http://example.com/index.php", "http://example.com/"},
		{"http://example.com/", "http://example.com"},
		{"http://example.com/a/?q=1", "https://www.example.com/a?q=1"},
		{"http://example.com/a#x", "http://example.com/a"},
	}
	for _, tt := range tests {
		if ka, kb := crawl.AliasKey(tt.a), crawl.AliasKey(tt.b); ka != kb {
			t.Errorf("AliasKey(%s) = %q, AliasKey(%s) = %q: want one key", tt.a, ka, tt.b, kb)
		}
	}
	apart := []struct{ a, b string }{
		{"http://example.com/a", "http://example.com/b"},
		{"http://example.com/a", "http://example.org/a"},
		{"http://example.com/a", "http://example.com:8080/a"},
		{"http://example.com/a?q=1", "http://example.com/a?q=2"},
		{"http://example.com/a", "http://example.com/a?q=1"},
		{"http://www2.example.com/a", "http://example.com/a"},
		{"http://example.com/dir/main.html", "http://example.com/dir/"},
		{"http://example.com/dir/notindex.html", "http://example.com/dir/not"},
	}
	for _, tt := range apart {
		if ka, kb := crawl.AliasKey(tt.a), crawl.AliasKey(tt.b); ka == kb {
			t.Errorf("AliasKey(%s) = AliasKey(%s) = %q: want different keys", tt.a, tt.b, ka)
		}
	}
}

// aliasSite serves one site under two names (site.test and www.site.test,
// one server: virtual hosts). canonical gives the canonical URL each path
// declares ("" none); header says whether it is declared in the HTTP Link
// header instead of the HTML; links the links of each path.
func aliasSite(t *testing.T, log *hitLog, pages map[string][]string, canonical func(base, path string) string, header func(path string) bool) (base, www string, res *fakeResolver) {
	t.Helper()
	var srvBase string
	s := &site{Dynamic: func(path string, _ int) (page, bool) {
		links, ok := pages[path]
		if !ok {
			return page{}, false
		}
		var p page
		head := ""
		if c := canonical(srvBase, path); c != "" {
			if header(path) {
				p.Header = http.Header{"Link": {fmt.Sprintf(`<%s>; rel="canonical"`, c)}}
			} else {
				head = fmt.Sprintf(`<link rel="canonical" href="%s">`, c)
			}
		}
		// One text for the forms of one page (/x, /x/, /x/index.html).
		name := strings.Trim(strings.TrimSuffix(path, "index.html"), "/")
		p.Body = htmlPage("page-"+name, head, links...)
		return p, true
	}}
	srv := startServer(t, "127.0.0.2", s.handler(), log)
	srvBase = srv.Base("site.test")
	res = &fakeResolver{Names: map[string][]string{"site.test": {srv.IP}, "www.site.test": {srv.IP}}}
	return srvBase, srv.Base("www.site.test"), res
}

// aliasHits counts the requests for pages other than robots.txt by Host.
func aliasHits(log *hitLog, host string) []string {
	var out []string
	for _, h := range log.all() {
		if strings.HasPrefix(h.Host, host+":") && h.Path != "/robots.txt" {
			out = append(out, h.Path)
		}
	}
	return out
}

// TestCanonicalAliasesSaved: a site served under site.test and
// www.site.test whose pages name their site.test form canonical (in the
// HTML, or in a Link header) and link to their own and each other's other
// forms (www., index.html, a trailing slash): one alias is requested, as
// the check of the hints (a duplicate of its canonical URL: confirmed), no
// other; every page is fetched, and the report counts what the hints saved.
func TestCanonicalAliasesSaved(t *testing.T) {
	var log hitLog
	var www string
	pages := map[string][]string{}
	base, www, res := aliasSite(t, &log, pages,
		func(base, path string) string { return base + strings.TrimSuffix(path, "index.html") },
		func(path string) bool { return strings.HasSuffix(path, "2") || strings.HasSuffix(path, "4") })
	pages["/"] = []string{"/p1", "/p2", "/p3", "/p4", "/index.html"}
	for i := 1; i <= 4; i++ {
		pages[fmt.Sprintf("/p%d", i)] = []string{
			www + "/",                      // the home page's www. form
			www + fmt.Sprintf("/p%d", i),   // its own www. form
			base + fmt.Sprintf("/p%d/", i), // its own form with a slash
		}
		pages[fmt.Sprintf("/p%d/", i)] = pages[fmt.Sprintf("/p%d", i)]
	}
	pages["/index.html"] = pages["/"]
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res}, base+"/")

	for _, p := range []string{"/", "/p1", "/p2", "/p3", "/p4"} {
		if rec := r.page(t, base+p); rec.Class != storage.ClassUnique || rec.Status != 200 {
			t.Errorf("%s: class %s status %d, want a unique page fetched", p, rec.Class, rec.Status)
		}
	}
	aliases := aliasHits(&log, "www.site.test")
	for _, h := range aliasHits(&log, "site.test") {
		if h == "/index.html" || strings.HasSuffix(h, "/") && h != "/" {
			aliases = append(aliases, h)
		}
	}
	// The home page's links are the first to meet a hint: its
	// /index.html form is the host's check, fetched.
	if len(aliases) != 1 || aliases[0] != "/index.html" {
		t.Errorf("aliases requested: %v, want only /index.html (the check of the hints)", aliases)
	}
	// Held: www /, www /p1-4, /p1/-/p4/.
	const want = 9
	if !strings.Contains(r.Text, fmt.Sprintf("%d requests saved by canonical hints; 0 withdrawn, 0 of 1 claims wrong, 0 hosts distrusted", want)) {
		t.Errorf("report line, want %d saved, 0 withdrawn, 1 claim checked:\n%s", want, r.Text)
	}
	if a := r.Aliases; a == nil || a.RequestsSaved != want || a.Withdrawn != 0 || a.ClaimsChecked != 1 || len(a.Distrusted) != 0 {
		t.Errorf("report alias_hints %+v, want %d saved, 1 claim checked", a, want)
	}
	skip := r.Skipped
	if c := skip[www+"/p3"]; c == nil || c.DuplicateOf != base+"/p3" || c.Method != "canonical" {
		t.Errorf("www /p3 recorded %+v, want represented by %s/p3", c, base)
	}
}

// TestCanonicalSitemapForm: the sitemap lists /d1/ ... /d5/ while a page
// links /d1/index.html ... : the listed forms are fetched, the other held on
// them but for the first, fetched as the check of the sitemap's hints.
func TestCanonicalSitemapForm(t *testing.T) {
	var log hitLog
	var base string
	s := &site{Dynamic: func(path string, _ int) (page, bool) {
		switch path {
		case "/robots.txt":
			return page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/sitemap.txt\n"}, true
		case "/sitemap.txt":
			return page{Body: fmt.Sprintf("%[1]s/d1/\n%[1]s/d2/\n%[1]s/d3/\n%[1]s/d4/\n%[1]s/d5/\n%[1]s/a\n", base)}, true
		case "/":
			return page{Body: htmlPage("home", "", "/a")}, true
		case "/a":
			return page{Body: htmlPage("a", "", "/d1/index.html", "/d2/index.html", "/d3/index.html", "/d4/index.html", "/d5/index.html")}, true
		}
		if d, ok := strings.CutSuffix(strings.TrimSuffix(path, "index.html"), "/"); ok && len(d) == 3 && d[:2] == "/d" {
			return page{Body: htmlPage("dir"+d, "")}, true
		}
		return page{}, false
	}}
	srv := startServer(t, "127.0.0.2", s.handler(), &log)
	base = srv.Base(srv.IP)
	r := runCrawl(t, crawlConfig{Delay: 100 * time.Millisecond}, base+"/") // the sitemap is read before /a is committed

	for i := 1; i <= 5; i++ {
		if rec := r.page(t, fmt.Sprintf("%s/d%d/", base, i)); rec.Status != 200 || rec.Class != storage.ClassUnique {
			t.Errorf("/d%d/: status %d class %s, want fetched", i, rec.Status, rec.Class)
		}
	}
	var indexes []string
	for _, h := range paths(log.all()) {
		if strings.HasSuffix(h, "/index.html") {
			indexes = append(indexes, h)
		}
	}
	if len(indexes) != 1 || indexes[0] != "/d1/index.html" {
		t.Errorf("index.html forms requested: %v, want only /d1/index.html (the check)", indexes)
	}
	for i := 2; i <= 5; i++ {
		u := fmt.Sprintf("%s/d%d/index.html", base, i)
		if c := r.Skipped[u]; c == nil || c.DuplicateOf != fmt.Sprintf("%s/d%d/", base, i) || c.Method != "canonical" {
			t.Errorf("%s recorded %+v, want represented by /d%d/", u, c, i)
		}
	}
	if a := r.Aliases; a == nil || a.RequestsSaved != 4 || a.ClaimsChecked != 1 || a.ClaimsWrong != 0 {
		t.Errorf("report alias_hints %+v, want 4 saved, 1 claim checked", a)
	}
}

// TestCanonicalHostile: every page names the home page canonical. The
// first claim checked (a page that is no duplicate of the home page)
// distrusts the host's hints, the alias held on them is queued, and every
// page is fetched.
func TestCanonicalHostile(t *testing.T) {
	var log hitLog
	var www string
	pages := map[string][]string{}
	base, www, res := aliasSite(t, &log, pages,
		func(base, path string) string { return base + "/" },
		func(string) bool { return false })
	// The seed /a names the home page canonical before the home page is
	// fetched, and links its own www. form (fetched: the host's check)
	// and its form with a slash: held on the home page until the claim is
	// checked.
	pages["/a"] = []string{www + "/a", base + "/a/", "/"}
	pages["/a/"] = pages["/a"]
	pages["/"] = []string{"/b", "/c", www + "/b"}
	pages["/b"] = []string{www + "/c", "/c"}
	pages["/c"] = []string{www + "/"}
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res}, base+"/a")

	// Nothing lost: each page's content fetched, under one name or the
	// other (/b and www /b are both linked from the home page).
	for _, p := range []string{"/", "/a", "/b", "/c"} {
		unique := 0
		for _, h := range []string{base, www} {
			if rec := r.Pages[h+p]; rec != nil && rec.Status == 200 && rec.Class == storage.ClassUnique {
				unique++
			}
		}
		if unique != 1 {
			t.Errorf("%s: fetched as unique under %d names, want 1", p, unique)
		}
	}
	for _, u := range []string{www + "/a", base + "/a/"} {
		if rec := r.page(t, u); rec.Status != 200 || !rec.Class.Duplicate() {
			t.Errorf("%s: status %d class %s, want fetched, a duplicate of /a", u, rec.Status, rec.Class)
		}
	}
	for u, c := range r.Skipped {
		if c.Method == "canonical" {
			t.Errorf("%s still held on %s after the host was distrusted", u, c.DuplicateOf)
		}
	}
	// Withdrawn: /a/, and www / when www /a (linking "/") was fetched
	// before the home page.
	if !strings.Contains(r.Text, "0 requests saved by canonical hints;") || !strings.Contains(r.Text, "1 of 1 claims wrong, 1 hosts distrusted") {
		t.Errorf("report line:\n%s", r.Text)
	}
	if a := r.Aliases; a == nil || a.Withdrawn < 1 || a.RequestsSaved != 0 || a.ClaimsChecked != 1 || a.ClaimsWrong != 1 || len(a.Distrusted) != 1 || a.Distrusted[0].Host != strings.TrimPrefix(base, "http://") ||
		!strings.Contains(a.Distrusted[0].Detail, "are not duplicates") {
		t.Errorf("report alias_hints %+v, want %s distrusted: not duplicates", a, base)
	}
}

// TestCanonicalManyToOne: more pages than a site can plausibly alias name
// one URL canonical before it is fetched: the host is distrusted, the
// aliases held on that URL are queued, and every page is fetched.
func TestCanonicalManyToOne(t *testing.T) {
	var log hitLog
	var www string
	pages := map[string][]string{"/target": nil}
	base, www, res := aliasSite(t, &log, pages,
		func(base, path string) string { return base + "/target" },
		func(string) bool { return false })
	var seeds []string
	for i := 1; i <= 10; i++ {
		p := fmt.Sprintf("/p%d", i)
		pages[p] = []string{www + p} // its own www. form: held on /target while trusted
		seeds = append(seeds, base+p)
	}
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res}, seeds...)

	for i := 1; i <= 10; i++ {
		p := fmt.Sprintf("/p%d", i)
		for _, u := range []string{base + p, www + p} {
			if rec := r.Pages[u]; rec == nil || rec.Status != 200 {
				t.Errorf("%s not fetched (%+v)", u, rec)
			}
		}
	}
	if rec := r.page(t, base+"/target"); rec.Status != 200 {
		t.Errorf("/target: status %d", rec.Status)
	}
	if !strings.Contains(r.Text, "0 requests saved by canonical hints") || !strings.Contains(r.Text, "1 hosts distrusted") ||
		strings.Contains(r.Text, " 0 withdrawn") {
		t.Errorf("report line, want aliases withdrawn and the host distrusted:\n%s", r.Text)
	}
}

// TestCanonicalTargetFails: an alias held on a canonical URL that turns
// out missing (404) is queued and fetched.
func TestCanonicalTargetFails(t *testing.T) {
	var log hitLog
	var www string
	pages := map[string][]string{}
	base, www, res := aliasSite(t, &log, pages,
		func(base, path string) string { return base + "/gone" },
		func(string) bool { return false })
	pages["/a"] = []string{www + "/a", base + "/a/"} // the first is the host's check, the second held
	pages["/a/"] = nil
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res}, base+"/a")

	if rec := r.page(t, base+"/gone"); rec.Status != 404 {
		t.Errorf("/gone: status %d, want 404 (queued for the alias held on it)", rec.Status)
	}
	if rec := r.page(t, base+"/a/"); rec.Status != 200 {
		t.Errorf("/a/: status %d, want fetched once its canonical URL failed", rec.Status)
	}
	if strings.Contains(r.Text, "requests saved by canonical hints") && !strings.Contains(r.Text, "0 requests saved by canonical hints") {
		t.Errorf("report counts a saving:\n%s", r.Text)
	}
}

// TestCanonicalAliasDiffers: site.test's pages name themselves canonical,
// but www.site.test is another site with other pages under the same paths:
// the host's check (its first alias, fetched) is no duplicate, the host is
// distrusted, and every www. page is fetched.
func TestCanonicalAliasDiffers(t *testing.T) {
	var log hitLog
	var base, www string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if strings.HasPrefix(r.Host, "www.") {
			fmt.Fprint(w, htmlPage("other-site"+r.URL.Path, ""))
			return
		}
		links := []string{www + r.URL.Path} // each page links its www. form
		if r.URL.Path == "/" {
			links = append(links, "/p1", "/p2", "/p3")
		}
		fmt.Fprint(w, htmlPage("site"+r.URL.Path, `<link rel="canonical" href="`+base+r.URL.Path+`">`, links...))
	})
	srv := startServer(t, "127.0.0.2", h, &log)
	base, www = srv.Base("site.test"), srv.Base("www.site.test")
	res := &fakeResolver{Names: map[string][]string{"site.test": {srv.IP}, "www.site.test": {srv.IP}}}
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res}, base+"/")

	for _, p := range []string{"/", "/p1", "/p2", "/p3"} {
		for _, u := range []string{base + p, www + p} {
			if rec := r.Pages[u]; rec == nil || rec.Status != 200 || rec.Class != storage.ClassUnique {
				t.Errorf("%s: %+v, want fetched, unique", u, rec)
			}
		}
	}
	// The JSON counts agree with the text's "1 of 1 claims wrong": the wrong claim was checked.
	if a := r.Aliases; a == nil || a.RequestsSaved != 0 || a.ClaimsChecked != 1 || a.ClaimsWrong != 1 || len(a.Distrusted) != 1 {
		t.Errorf("report alias_hints %+v, want nothing saved, the check wrong, the host distrusted", a)
	}
}

// TestCanonicalManyHeldWithdrawn: more aliases held than one record lists
// (heldChunk) are all queued when the host is distrusted at the end.
func TestCanonicalManyHeldWithdrawn(t *testing.T) {
	var log hitLog
	var www string
	const n = 150
	pages := map[string][]string{"/z": nil}
	base, www, res := aliasSite(t, &log, pages,
		func(base, path string) string {
			if path == "/z" {
				return base + "/" // the misuse, met last
			}
			return base + path
		},
		func(string) bool { return false })
	var home []string
	for i := 1; i <= n; i++ {
		p := fmt.Sprintf("/p%d", i)
		home = append(home, p)
		pages[p] = []string{www + p}
	}
	pages[fmt.Sprintf("/p%d", n)] = append(pages[fmt.Sprintf("/p%d", n)], "/z")
	pages["/"] = home
	r := runCrawl(t, crawlConfig{ScopeAny: true, Resolver: res, Timeout: 5 * time.Minute}, base+"/")

	for i := 1; i <= n; i++ {
		if rec := r.Pages[fmt.Sprintf("%s/p%d", www, i)]; rec == nil || rec.Status != 200 {
			t.Errorf("www /p%d not fetched: %+v", i, rec)
		}
	}
	// One www. page was the host's check (fetched), the others held
	// (but for a page whose commit came after /z's: a commit may lag its
	// fetch), more than one record's worth.
	if a := r.Aliases; a == nil || a.Withdrawn <= 100 || a.Withdrawn > n-1 || a.RequestsSaved != 0 || a.ClaimsWrong != 1 || a.ClaimsChecked < a.ClaimsWrong || len(a.Distrusted) != 1 {
		t.Errorf("report alias_hints %+v, want more than 100 withdrawn, the wrong claim among those checked", a)
	}
}
