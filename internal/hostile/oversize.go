package hostile

import (
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
)

// Pages whose content makes writes grow: thousands of links on one page.
// Each takes its size from the path, so a test runs them with other numbers:
//
//	/many-links/N        N short same-host links, /many-links/t/I for I < N
//	/long-links/N/L      N same-host links of L bytes each (path padded)
//
// Every link target answers with a small page of its own.
const (
	// MaxLinks bounds N, so a typo cannot make the server build a page of
	// gigabytes.
	MaxLinks = 200_000
	// MaxLinkLength bounds L.
	MaxLinkLength = 8 << 10
)

// manyLinks serves the pages of the oversize family; ok is false for paths
// outside it.
func manyLinks(w http.ResponseWriter, r *http.Request) (ok bool) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/many-links/t/"), strings.HasPrefix(p, "/long-links/t/"):
		page(w, "text/html; charset=utf-8", "Link target", "one of many link targets: "+html.EscapeString(p))
	case strings.HasPrefix(p, "/many-links/"):
		n, err := strconv.Atoi(strings.TrimPrefix(p, "/many-links/"))
		if err != nil || n < 0 || n > MaxLinks {
			http.NotFound(w, r)
			return true
		}
		linkPage(w, n, func(i int) string { return fmt.Sprintf("/many-links/t/%d", i) })
	case strings.HasPrefix(p, "/long-links/"):
		var n, l int
		if _, err := fmt.Sscanf(strings.TrimPrefix(p, "/long-links/"), "%d/%d", &n, &l); err != nil ||
			n < 0 || n > MaxLinks || l < 32 || l > MaxLinkLength {
			http.NotFound(w, r)
			return true
		}
		linkPage(w, n, func(i int) string {
			head := fmt.Sprintf("/long-links/t/%d/", i)
			return head + strings.Repeat("x", max(0, l-len(head)))
		})
	default:
		return false
	}
	return true
}

func linkPage(w http.ResponseWriter, n int, href func(i int) string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%d links</title></head><body><h1>An index of %d pages</h1><ul>\n", n, n)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "<li><a href=\"%s\">page %d</a>\n", href(i), i)
	}
	b.WriteString("</ul></body></html>\n")
	w.Write([]byte(b.String()))
}
