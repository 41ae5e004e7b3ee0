package hostile

import (
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// SessionVariant names one session-id shop (issue 16: "session ids are an endless
// trap"). Every shop puts a fresh session id into every link of every response, so
// its handful of pages is reachable under endlessly many URLs, each link fanning out
// to three more.
type SessionVariant string

// The session-id shops. Each is meant to be served on a host of its own: what a
// crawler learns about a parameter it learns per host.
const (
	// SessionSID: "/a?sid=R", R 32 hex digits; every page holds the same text.
	SessionSID SessionVariant = "sid"
	// SessionJSESSIONID: "/a;jsessionid=R", the servlet path parameter; every page
	// holds the same text.
	SessionJSESSIONID SessionVariant = "jsessionid"
	// SessionVisit: "/a?visit=R", R ten decimal digits, a name no stripping list
	// knows; every page holds the same text.
	SessionVisit SessionVariant = "visit"
	// SessionPaged: "/list?page=N&s=R", a front page and six listing pages of
	// different text; page selects content, s does not.
	SessionPaged SessionVariant = "paged"
	// SessionAisles: "/a?token=R", R a random UUID; each aisle's text is its own
	// (a shared header and footer around a paragraph of its own), so only the
	// copies of one aisle under different tokens are exact duplicates.
	SessionAisles SessionVariant = "aisles"

	// The path session shops (issue 27): the session id is a path segment of its
	// own, and each aisle's text is its own, as in SessionAisles. The front page
	// is also served without a session (a first visit).

	// SessionASPNET: "/(S(R))/a", ASP.NET's cookieless session, R 24 letters
	// and digits.
	SessionASPNET SessionVariant = "aspnet"
	// SessionASPNETX: "/(X(1)S(R))/a", the same with ASP.NET's cookieless
	// marker of a browser without cookies first.
	SessionASPNETX SessionVariant = "aspnetx"
	// SessionSegment: "/sess/R/a", R 32 hex digits, a bare opaque segment.
	SessionSegment SessionVariant = "segment"
)

// PathSessionVariants lists the shops whose session id is a path segment.
func PathSessionVariants() []SessionVariant {
	return []SessionVariant{SessionASPNET, SessionASPNETX, SessionSegment}
}

// pathSession reports whether v keeps its session id in a path segment.
func (v SessionVariant) pathSession() bool {
	return v == SessionASPNET || v == SessionASPNETX || v == SessionSegment
}

// SessionVariants lists every shop.
func SessionVariants() []SessionVariant {
	return []SessionVariant{SessionSID, SessionJSESSIONID, SessionVisit, SessionPaged, SessionAisles}
}

// sessionAisles are the paths of the shops other than SessionPaged.
var sessionAisles = []string{"/", "/a", "/b", "/c", "/d"}

const sessionListPages = 6

// SessionShop serves one session-id shop. It is safe for concurrent use.
type SessionShop struct {
	v SessionVariant

	mu    sync.Mutex
	hits  map[string]int // by real page (RealPages)
	total int
}

// NewSessionShop returns the handler of shop v.
func NewSessionShop(v SessionVariant) *SessionShop {
	return &SessionShop{v: v, hits: map[string]int{}}
}

// RealPages returns the shop's distinct pages as path and query without the session
// id, e.g. "/a" or "/list?page=2". Each holds its own text, except in the shops whose
// pages all hold the same one.
func (s *SessionShop) RealPages() []string {
	if s.v == SessionPaged {
		out := []string{"/"}
		for n := 1; n <= sessionListPages; n++ {
			out = append(out, "/list?page="+strconv.Itoa(n))
		}
		return out
	}
	return append([]string(nil), sessionAisles...)
}

// Titles returns the titles of the shop's distinct texts: one per real page, or a
// single one when every page holds the same text.
func (s *SessionShop) Titles() []string {
	switch {
	case s.v == SessionPaged, s.v == SessionAisles, s.v.pathSession():
		out := make([]string, 0, len(s.RealPages()))
		for _, p := range s.RealPages() {
			out = append(out, s.title(p))
		}
		return out
	}
	return []string{s.title("/")}
}

// Requests returns the number of requests served, robots.txt included.
func (s *SessionShop) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Hits returns the number of requests per real page (robots.txt and unknown paths
// are not in it).
func (s *SessionShop) Hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for p, n := range s.hits {
		out[p] = n
	}
	return out
}

func (s *SessionShop) title(real string) string {
	switch s.v {
	case SessionPaged:
		if real == "/" {
			return "Paged shop front"
		}
		return "Paged shop listing " + strings.TrimPrefix(real, "/list?page=")
	case SessionAisles:
		if real == "/" {
			return "Aisle shop front"
		}
		return "Aisle shop aisle " + strings.TrimPrefix(real, "/")
	}
	if s.v.pathSession() {
		if real == "/" {
			return "Path session shop " + string(s.v) + " front"
		}
		return "Path session shop " + string(s.v) + " aisle " + strings.TrimPrefix(real, "/")
	}
	return "Session shop " + string(s.v)
}

// real returns the real page a request is for, and false for an unknown one.
func (s *SessionShop) real(r *http.Request) (string, bool) {
	path := r.URL.Path
	if i := strings.IndexByte(path, ';'); i >= 0 && s.v == SessionJSESSIONID {
		if !strings.HasPrefix(path[i:], ";jsessionid=") || strings.Contains(path[i+1:], "/") {
			return "", false
		}
		path = path[:i]
	}
	if s.v.pathSession() {
		path = s.stripSession(path)
	}
	if s.v == SessionPaged {
		if path == "/" {
			return "/", true
		}
		n, err := strconv.Atoi(r.URL.Query().Get("page"))
		if path != "/list" || err != nil || n < 1 || n > sessionListPages {
			return "", false
		}
		return "/list?page=" + strconv.Itoa(n), true
	}
	for _, a := range sessionAisles {
		if path == a {
			return a, true
		}
	}
	return "", false
}

// stripSession returns path without its session segment ("/(S(R))/a" to "/a"), or
// path itself when it has none.
func (s *SessionShop) stripSession(path string) string {
	prefix, open := "/(S(", "))"
	switch s.v {
	case SessionASPNETX:
		prefix = "/(X(1)S("
	case SessionSegment:
		prefix, open = "/sess/", "/"
	}
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return path
	}
	i := strings.Index(rest, open)
	if i < 0 || strings.ContainsAny(rest[:i], "/()") {
		return "\x00" // no page
	}
	p := rest[i+len(open):]
	if s.v != SessionSegment {
		p = strings.TrimPrefix(p, "/")
		if !strings.HasPrefix(rest[i+len(open):], "/") {
			return "\x00"
		}
	}
	return "/" + p
}

// link returns the URL of real page p under session id sid.
func (s *SessionShop) link(p, sid string) string {
	switch s.v {
	case SessionSID:
		return p + "?sid=" + sid
	case SessionJSESSIONID:
		return p + ";jsessionid=" + sid
	case SessionVisit:
		return p + "?visit=" + sid
	case SessionPaged:
		return p + map[bool]string{true: "&", false: "?"}[strings.Contains(p, "?")] + "s=" + sid
	case SessionASPNET:
		return "/(S(" + sid + "))" + p
	case SessionASPNETX:
		return "/(X(1)S(" + sid + "))" + p
	case SessionSegment:
		return "/sess/" + sid + p
	default:
		return p + "?token=" + sid
	}
}

func (s *SessionShop) sessionID() string {
	switch s.v {
	case SessionSID:
		return fmt.Sprintf("%016x%016x", rand.Uint64()|1<<63, rand.Uint64()|0xa)
	case SessionJSESSIONID:
		return strings.ToUpper(fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64()))
	case SessionVisit:
		return fmt.Sprintf("%010d", rand.Uint64N(1e10))
	case SessionPaged:
		return fmt.Sprintf("%012x", rand.Uint64N(1<<48))
	case SessionASPNET, SessionASPNETX:
		const chars = "abcdefghijklmnopqrstuvwxyz012345" // ASP.NET's alphabet
		b := make([]byte, 24)
		for i := range b {
			b[i] = chars[rand.IntN(len(chars))]
		}
		return string(b)
	case SessionSegment:
		return fmt.Sprintf("a%015x%016x", rand.Uint64N(1<<60), rand.Uint64())
	default:
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(rand.Uint32())
		}
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	}
}

// links returns the real pages page p links to: three of them, round the shop.
func (s *SessionShop) links(p string) []string {
	pages := s.RealPages()
	i := 0
	for j, q := range pages {
		if q == p {
			i = j
		}
	}
	out := make([]string, 0, 3)
	for k := 1; k <= 3; k++ {
		out = append(out, pages[(i+k)%len(pages)])
	}
	return out
}

// text returns the visible text of page p (without its links).
func (s *SessionShop) text(p string) string {
	const shared = "Welcome to the shop. Browse our fine selection of goods, " +
		"add what you like to your basket and pay at the counter. Delivery is free on orders above twenty crowns."
	switch {
	case s.v == SessionPaged, s.v == SessionAisles, s.v.pathSession():
		var b strings.Builder
		b.WriteString(shared)
		h := 0
		for _, c := range p {
			h = h*31 + int(c)
		}
		r := rand.New(rand.NewPCG(uint64(h), 7))
		words := []string{"kettle", "lamp", "rope", "saddle", "anvil", "barrel", "candle", "ladder", "bucket",
			"hammer", "lantern", "basket", "blanket", "mirror", "needle", "pillow", "shovel", "teapot", "wagon", "whistle"}
		fmt.Fprintf(&b, " On this page, %s:", s.title(p))
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, " %s %d", words[r.IntN(len(words))], r.IntN(1000))
		}
		b.WriteString(". ")
		b.WriteString(shared)
		return b.String()
	}
	return shared
}

func (s *SessionShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.total++
	s.mu.Unlock()
	p, ok := s.real(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.hits[p]++
	s.mu.Unlock()
	sid := s.sessionID()
	var b strings.Builder
	t := html.EscapeString(s.title(p))
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p><ul>\n",
		t, t, html.EscapeString(s.text(p)))
	for _, q := range s.links(p) {
		fmt.Fprintf(&b, "<li><a href=\"%s\">more goods</a></li>\n", html.EscapeString(s.link(q, sid)))
	}
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}
