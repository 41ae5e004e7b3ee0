package testweb

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// MirrorChain is a generated web of three sites on which a page can be
// skipped in favour of a counterpart that is skipped itself:
//
//   - Orig (127.0.0.43/o/): 30 pages of 160 words and x.html, linked from
//     p1.html only.
//   - Mirror (127.0.0.44/m/): Orig's pages with a 22-word banner: plain J
//     about 0.86 with Orig's (unique pages by the duplicate decision), 0.95
//     with the banner left out as the pair's systematic difference (a
//     mirror). Its p0.html is Orig's, the duplicate pair that proposes the
//     candidate.
//   - Other (127.0.0.45/l/): another version of Mirror, served slowest: its
//     pages are Mirror's, banner included (exact duplicates of Mirror's:
//     presumed copies of it), but for one in three rewritten, and its
//     x.html, the Lost page, shares nothing with Orig's or Mirror's.
//
// Other's p1.html, a duplicate of Mirror's, links x.html: Other's x.html is
// skipped waiting on Mirror's, which is queued for it; by the time Mirror's
// x.html is leased (linked from Mirror's p1.html, it is queued after
// Mirror's 30 pages) Mirror is decided a mirror of Orig and its x.html is
// skipped. Other's x.html must then be fetched: a skipped page represents
// nothing.
type MirrorChain struct {
	Orig, Mirror, Other Prefix
	Lost                string                   // the path on Other whose content only Other holds
	Latency             map[string]time.Duration // per host IP: the order of the fetches
}

// Prefix is a site: a host IP and a path prefix.
type Prefix struct{ IP, Path string }

// WriteMirrorChain writes the sites of a MirrorChain under root (one folder
// per host IP, as Start serves them).
func WriteMirrorChain(root string) (MirrorChain, error) {
	c := MirrorChain{
		Orig: Prefix{"127.0.0.43", "/o/"}, Mirror: Prefix{"127.0.0.44", "/m/"}, Other: Prefix{"127.0.0.45", "/l/"},
		Lost:    "/l/x.html",
		Latency: map[string]time.Duration{"127.0.0.44": 40 * time.Millisecond, "127.0.0.45": 150 * time.Millisecond},
	}
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("p%d.html", i))
	}
	banner := "<div>this copy is served by the volunteer mirror network of the example project, updated every night from the main site by rsync</div>"
	site := func(banner string) map[string]string {
		s := map[string]string{"index.html": chainPage("index", banner, names...)}
		for _, name := range append(names, "x.html") {
			links := []string{"./"}
			if name == "p1.html" {
				links = append(links, "x.html") // x.html's only link
			}
			s[name] = chainPage(strings.TrimSuffix(name, ".html"), banner, links...)
		}
		return s
	}
	orig, mir, other := site(""), site(banner), site(banner)
	mir["p0.html"] = orig["p0.html"]
	other["index.html"] = chainPage("index", "<p>the latest release of the manual</p>", names...)
	for i, name := range append(names, "x.html") {
		if i%3 == 0 || name == "x.html" {
			other[name] = chainPage("rewritten-"+strings.TrimSuffix(name, ".html"), banner, "./")
		}
	}
	for _, s := range []struct {
		at    Prefix
		files map[string]string
	}{{c.Orig, orig}, {c.Mirror, mir}, {c.Other, other}} {
		dir := filepath.Join(root, s.at.IP, filepath.FromSlash(s.at.Path))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return c, err
		}
		for name, body := range s.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// Handler is an Options.Handler that delays each host's answers by its
// Latency.
func (c MirrorChain) Handler(ip string, next http.Handler) http.Handler {
	d := c.Latency[ip]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		next.ServeHTTP(w, r)
	})
}

// chainPage is a page of 160 one-token words named after name, with banner
// before its heading and links after its text.
func chainPage(name, banner string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body>%s<h1>%s</h1><p>", name, banner, name)
	for i := range 160 {
		fmt.Fprintf(&b, "%sw%d ", name, i)
	}
	b.WriteString("</p>")
	for _, l := range links {
		fmt.Fprintf(&b, "<a href=%q>%s</a> ", l, l)
	}
	return b.String() + "</body></html>"
}

// StartMirrorChain writes the chain under root and serves it; seeds are the
// three sites' start URLs (Orig, Mirror, Other). The caller closes web.
func StartMirrorChain(root string) (chain MirrorChain, web *loopweb.Web, seeds []string, err error) {
	if chain, err = WriteMirrorChain(root); err != nil {
		return chain, nil, nil, err
	}
	if web, err = loopweb.Start(root, loopweb.Options{Handler: chain.Handler}); err != nil {
		return chain, nil, nil, err
	}
	for _, s := range []Prefix{chain.Orig, chain.Mirror, chain.Other} {
		seeds = append(seeds, web.URL(s.IP, s.Path))
	}
	return chain, web, seeds, nil
}
