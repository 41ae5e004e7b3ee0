package hostile

import (
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
)

// SessionRedirector is a servlet-style site that serves its pages only under a
// session id in the path: a request without ";jsessionid=" is redirected to the
// same path with a fresh one (the crawler keeps no cookies, so every request is
// a new session). Each page links to the others without a session id. With
// Insist, a request that carries a session id is redirected to a fresh one
// again, forever: a loop that must cost a bounded number of requests.
type SessionRedirector struct {
	Pages  []string // paths, e.g. "/", "/a", "/b"
	Insist bool

	mu   sync.Mutex
	hits int
}

// Hits returns the number of requests served.
func (s *SessionRedirector) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// Text returns the distinct text of page p.
func (s *SessionRedirector) Text(p string) string {
	return fmt.Sprintf("The page at %s of the session shop, with words of its own: %x.", p, len(p)*7919+int(p[len(p)-1]))
}

func (s *SessionRedirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits++
	s.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	path, param, has := strings.Cut(r.URL.Path, ";")
	if !has || !strings.HasPrefix(strings.ToLower(param), "jsessionid=") || s.Insist {
		id := fmt.Sprintf("%016X", rand.Uint64())
		w.Header().Set("Location", path+";jsessionid="+id)
		w.WriteHeader(http.StatusFound)
		return
	}
	known := false
	for _, p := range s.Pages {
		known = known || p == path
	}
	if !known {
		http.NotFound(w, r)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>Session shop %s</title></head><body><p>%s</p><ul>",
		html.EscapeString(path), html.EscapeString(s.Text(path)))
	for _, p := range s.Pages {
		fmt.Fprintf(&b, `<li><a href="%s">%s</a>`, html.EscapeString(p), html.EscapeString(p))
	}
	b.WriteString("</ul></body></html>")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}
