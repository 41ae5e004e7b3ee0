// Package hostile serves the broken and malicious responses a crawler meets
// on the open web (issue #7), each on its own path of one loopback server, so
// reliability tests can crawl them next to well-behaved hosts:
//
//   - bodies that cost time: a slow drip (one byte per DripInterval), a body
//     that never ends, a Content-Length of 10 GB followed by a few bytes and
//     a hang or a close;
//   - bodies that cost memory: a gzip bomb (streamed: about 1 KB of gzip per
//     MiB of output, 1 GB in all), a 5 MB page on a single line, a DOM nested
//     100,000 deep, binary bytes served as text/html;
//   - bytes that lie: invalid UTF-8, charset labels that do not match the
//     bytes, an unknown charset;
//   - redirects: loops, a 30-step chain, an endless chain, redirects to ftp:, file:, data: and
//     javascript: URLs;
//   - failures: bursts of 503 before a page appears, a permanent 500,
//     connection resets before and in the middle of a response;
//   - traps: an endless calendar whose every month links to the next and the
//     previous one;
//   - a second host whose robots.txt never answers (on its own address), and
//     a link to a host that does not resolve (a .invalid name);
//   - addresses (addresses.go): redirects to cloud metadata services,
//     link-local, private and foreign loopback addresses and to a name test
//     resolvers map to a private address; a page linking 3,000 host names
//     that do not resolve.
//
// The index page at / links to every horror. Every request is counted by path
// (Hits), so a test can bound how far a crawler followed a trap. Hanging
// handlers return when the client goes away or the server closes.
package hostile

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// UnresolvableHost is a name that never resolves (RFC 6761 reserves .invalid).
const UnresolvableHost = "horseshoe-nowhere.invalid"

// Horror is one hostile path of the server.
type Horror struct {
	Path string // path (and query) on the server, starting with '/'
	Name string // short identifier
	What string // what the server does there
}

// Horrors lists the hostile paths that the index page links to, in index
// order. The calendar's further months and the redirect chain's further steps
// are reached from these.
func Horrors() []Horror {
	return append([]Horror{
		{"/slow-drip", "slow-drip", "text/html, one byte per drip interval, never finishes"},
		{"/endless", "endless", "text/html, chunked, an endless stream of paragraphs"},
		{"/huge-length-hang", "huge-length-hang", "Content-Length 10 GB, a few bytes, then silence"},
		{"/huge-length-close", "huge-length-close", "Content-Length 10 GB, a few bytes, then the connection closes"},
		{"/gzip-bomb", "gzip-bomb", "Content-Encoding gzip inflating to 1 GB of HTML"},
		{"/redirect-loop/a", "redirect-loop", "a -> b -> a"},
		{"/redirect-self", "redirect-self", "redirects to itself"},
		{"/chain/1", "chain", "a chain of 30 redirects ending in a page"},
		{"/redirect-forever/1", "redirect-forever", "every step redirects to the next one (up to MaxRedirectSteps)"},
		{"/redirect-ftp", "redirect-ftp", "redirects to ftp:"},
		{"/redirect-file", "redirect-file", "redirects to file:///etc/passwd"},
		{"/redirect-data", "redirect-data", "redirects to a data: URL"},
		{"/redirect-javascript", "redirect-javascript", "redirects to javascript:"},
		{"/bad-utf8", "bad-utf8", "charset=utf-8 with invalid UTF-8 sequences"},
		{"/lying-charset", "lying-charset", "charset=utf-16le on windows-1252 bytes"},
		{"/lying-meta", "lying-meta", "no header charset, meta says shift_jis, bytes are koi8-r"},
		{"/bogus-charset", "bogus-charset", "charset=x-horseshoe-bogus"},
		{"/binary-as-html", "binary-as-html", "200 KB of random bytes served as text/html"},
		{"/one-line", "one-line", "a 5 MB page on one line"},
		{"/deep-dom", "deep-dom", "a DOM nested 100,000 elements deep"},
		{"/calendar/2024/06", "calendar", "every month links to the next and the previous month, forever"},
		{"/burst-5xx", "burst-5xx", "503 with Retry-After for the first BurstLength requests, then a page"},
		{"/always-500", "always-500", "500 every time"},
		{"/reset", "reset", "the connection is reset before any response"},
		{"/reset-mid-body", "reset-mid-body", "headers and half a body, then a reset"},
		{"/empty", "empty", "200 text/html with an empty body"},
		{"/utf16be-header", "utf16be-header", "charset=UTF-16BE in the header, UTF-16BE bytes without a BOM"},
		{"/odd-hrefs", "odd-hrefs", "links with stray '%', backslashes, tabs, spaces and non-ASCII (OddHrefs)"},
	}, addressHorrors()...)
}

// Options configures the server. The zero value is usable.
type Options struct {
	// Addr is the main host's listen address; default "127.0.0.1:0".
	Addr string
	// RobotsAddr is the listen address of the host whose robots.txt never
	// answers; default "127.0.0.1:0". Use another IP than Addr's so the two
	// hosts do not share a politeness clock.
	RobotsAddr string
	// DripInterval is the pause between two bytes of /slow-drip; default 1s.
	DripInterval time.Duration
	// BurstLength is the number of 503 answers /burst-5xx gives before it
	// serves its page; default 3.
	BurstLength int
	// MaxHang bounds how long any handler hangs or streams; default 2m. A
	// crawler that has not given up by then fails its test anyway.
	MaxHang time.Duration
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.RobotsAddr == "" {
		o.RobotsAddr = "127.0.0.1:0"
	}
	if o.DripInterval <= 0 {
		o.DripInterval = time.Second
	}
	if o.BurstLength <= 0 {
		o.BurstLength = 3
	}
	if o.MaxHang <= 0 {
		o.MaxHang = 2 * time.Minute
	}
	return o
}

// Sizes of the generated bodies.
const (
	HugeLength   = 10 << 30 // declared Content-Length of /huge-length-*
	BombSize     = 1 << 30  // bytes /gzip-bomb inflates to
	OneLineSize  = 5 << 20  // bytes of /one-line
	DeepDOMDepth = 100_000  // nesting of /deep-dom
	BinarySize   = 200 << 10
	ChainLength  = 30 // redirects of /chain/1 before the final page
	// MaxRedirectSteps bounds /redirect-forever/N (it answers 404 beyond),
	// so a crawler without a hop limit ends its crawl, late, instead of
	// hanging the test.
	MaxRedirectSteps = 1000
)

// Handler serves the main hostile host. Its methods are safe for concurrent use.
type Handler struct {
	o Options

	mu     sync.Mutex
	hits   map[string]int
	bursts map[string]int
}

// NewHandler returns the handler of the main hostile host. Links to the host
// whose robots.txt times out are not made by it (the caller seeds that host).
func NewHandler(o Options) *Handler {
	return &Handler{o: o.withDefaults(), hits: map[string]int{}, bursts: map[string]int{}}
}

// Hits returns the number of requests whose path starts with prefix.
func (h *Handler) Hits(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for p, c := range h.hits {
		if strings.HasPrefix(p, prefix) {
			n += c
		}
	}
	return n
}

// Paths returns every path requested so far with its request count.
func (h *Handler) Paths() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.hits))
	for p, c := range h.hits {
		out[p] = c
	}
	return out
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), h.o.MaxHang)
	defer cancel()

	p := r.URL.Path
	if manyLinks(w, r) {
		return
	}
	switch {
	case p == "/":
		h.index(w)
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	case p == "/slow-drip":
		h.slowDrip(ctx, w)
	case p == "/endless":
		endless(ctx, w)
	case p == "/huge-length-hang":
		hugeLength(ctx, w, true)
	case p == "/huge-length-close":
		hugeLength(ctx, w, false)
	case p == "/gzip-bomb":
		gzipBomb(ctx, w)
	case p == "/redirect-loop/a":
		http.Redirect(w, r, "/redirect-loop/b", http.StatusFound)
	case p == "/redirect-loop/b":
		http.Redirect(w, r, "/redirect-loop/a", http.StatusMovedPermanently)
	case p == "/redirect-self":
		http.Redirect(w, r, "/redirect-self", http.StatusFound)
	case strings.HasPrefix(p, "/chain/"):
		chain(w, r)
	case strings.HasPrefix(p, "/redirect-forever/"):
		redirectForever(w, r)
	case p == "/redirect-ftp":
		redirectRaw(w, "ftp://ftp.example.com/pub/file.html")
	case p == "/redirect-file":
		redirectRaw(w, "file:///etc/passwd")
	case p == "/redirect-data":
		redirectRaw(w, "data:text/html,%3Ch1%3Einjected%3C%2Fh1%3E")
	case p == "/redirect-javascript":
		redirectRaw(w, "javascript:alert(1)")
	case p == "/bad-utf8":
		page(w, "text/html; charset=utf-8", "Bad UTF-8",
			"valid words then \xff\xfe\xc3\x28 broken \xed\xa0\x80 surrogate \xf8\x88\x80\x80\x80 overlong \xc0\xaf and more words")
	case p == "/lying-charset":
		page(w, "text/html; charset=utf-16le", "Lying charset",
			"caf\xe9 na\xefve r\xe9sum\xe9 se\xf1or \x93quoted\x94 plain ascii words follow here")
	case p == "/lying-meta":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><html><head><meta charset="shift_jis"><title>Lying meta</title></head><body><p>`+
			"\xf0\xd2\xc9\xd7\xc5\xd4 \xcd\xc9\xd2 koi8-r bytes under a shift_jis label</p></body></html>")
	case p == "/bogus-charset":
		page(w, "text/html; charset=x-horseshoe-bogus", "Bogus charset", "an unknown charset label on plain words")
	case p == "/binary-as-html":
		binary(w)
	case p == "/one-line":
		oneLine(ctx, w)
	case p == "/deep-dom":
		deepDOM(ctx, w)
	case strings.HasPrefix(p, "/calendar/"):
		calendar(w, r)
	case p == "/burst-5xx":
		h.burst(w, p)
	case p == "/always-500":
		http.Error(w, "internal server error", http.StatusInternalServerError)
	case p == "/reset":
		h.reset(w, "")
	case p == "/reset-mid-body":
		h.reset(w, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4096\r\n\r\n<html><body><p>half a page")
	case serveAddresses(w, p):
	case p == "/empty":
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "0")
	case p == "/utf16be-header":
		utf16BEPage(w)
	case p == "/odd-hrefs":
		oddHrefs(w)
	case strings.HasPrefix(p, "/utf16be/"), strings.HasPrefix(p, "/odd/"):
		directiveTarget(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) index(w http.ResponseWriter) {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Hostile server</title></head><body><h1>Hostile server</h1><ul>\n")
	for _, hr := range Horrors() {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a>: %s</li>\n", html.EscapeString(hr.Path), hr.Name, html.EscapeString(hr.What))
	}
	fmt.Fprintf(&b, "<li><a href=\"http://%s/\">a host that does not resolve</a></li>\n", UnresolvableHost)
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

func page(w http.ResponseWriter, contentType, title, body string) {
	w.Header().Set("Content-Type", contentType)
	io.WriteString(w, "<!doctype html><html><head><title>"+title+"</title></head><body><p>"+body+"</p></body></html>\n")
}

func flush(w http.ResponseWriter) error {
	return http.NewResponseController(w).Flush()
}

func (h *Handler) slowDrip(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusOK)
	const body = "<!doctype html><html><head><title>Slow drip</title></head><body><p>one byte at a time, forever "
	t := time.NewTicker(h.o.DripInterval)
	defer t.Stop()
	for i := 0; ; i++ {
		c := byte('.')
		if i < len(body) {
			c = body[i]
		}
		if _, err := w.Write([]byte{c}); err != nil {
			return
		}
		if flush(w) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func endless(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	io.WriteString(w, "<!doctype html><html><head><title>Endless</title></head><body>\n")
	for i := 0; ctx.Err() == nil; i++ {
		if _, err := fmt.Fprintf(w, "<p>paragraph %d of a body that never ends, with some words to index</p>\n", i); err != nil {
			return
		}
	}
}

func hugeLength(ctx context.Context, w http.ResponseWriter, hang bool) {
	w.Header().Set("Content-Type", "text/html")
	w.Header().Set("Content-Length", strconv.FormatInt(HugeLength, 10))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "<!doctype html><html><body><p>ten gigabytes follow")
	if flush(w) != nil || !hang {
		// Returning with the body short of its Content-Length makes
		// net/http close the connection.
		return
	}
	<-ctx.Done()
}

// gzipBomb streams BombSize bytes of HTML through gzip at the best
// compression: about 1 KB of gzip per MiB of output, so a client that stops
// reading after a few MiB costs the server almost nothing either.
func gzipBomb(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.Header().Set("Content-Encoding", "gzip")
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := io.WriteString(zw, "<!doctype html><html><head><title>Bomb</title></head><body><p>"); err != nil {
		return
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = ' '
	}
	for n := 0; n < BombSize && ctx.Err() == nil; n += len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			return
		}
	}
	zw.Close()
}

func chain(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/chain/"))
	if err != nil || n < 1 || n > ChainLength+1 {
		http.NotFound(w, r)
		return
	}
	if n <= ChainLength {
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n+1), http.StatusFound)
		return
	}
	page(w, "text/html; charset=utf-8", "End of the chain", "you followed thirty redirects to get here")
}

func redirectForever(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/redirect-forever/"))
	if err != nil || n < 1 || n > MaxRedirectSteps {
		http.NotFound(w, r)
		return
	}
	http.Redirect(w, r, "/redirect-forever/"+strconv.Itoa(n+1), http.StatusFound)
}

// redirectRaw sends a redirect with target as the Location header verbatim
// (http.Redirect would make it relative to the request path).
func redirectRaw(w http.ResponseWriter, target string) {
	w.Header().Set("Location", target)
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusFound)
	io.WriteString(w, "<a href=\""+html.EscapeString(target)+"\">moved</a>\n")
}

func binary(w http.ResponseWriter) {
	r := rand.New(rand.NewPCG(7, 11))
	b := make([]byte, BinarySize)
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	w.Header().Set("Content-Type", "text/html")
	w.Write(b)
}

func oneLine(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(OneLineSize))
	const head = "<!doctype html><html><head><title>One line</title></head><body><p>"
	const tail = "</p></body></html>"
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(head)
	words := []string{"alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf "}
	n := len(head)
	for i := 0; ctx.Err() == nil; i++ {
		wd := words[i%len(words)]
		if n+len(wd) > OneLineSize-len(tail) {
			break
		}
		if _, err := bw.WriteString(wd); err != nil {
			return
		}
		n += len(wd)
	}
	bw.WriteString(strings.Repeat(" ", OneLineSize-len(tail)-n))
	bw.WriteString(tail)
	bw.Flush()
}

func deepDOM(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("<!doctype html><html><head><title>Deep DOM</title></head><body>")
	// The elements are left open (the parser closes them at the end), which
	// keeps the page at 500 KB, under common body-size caps.
	for i := 0; i < DeepDOMDepth && ctx.Err() == nil; i++ {
		bw.WriteString("<div>")
	}
	bw.WriteString("<p>deep inside <a href=\"/deep-dom/bottom\">the bottom</a></p></body></html>")
	bw.Flush()
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// calendar serves /calendar/YYYY/MM with links to the previous and the next
// month, for any year: an infinite, link-connected space of pages.
func calendar(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/calendar/"), "/"), "/")
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	y, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || m < 1 || m > 12 || y < -99999 || y > 99999 {
		http.NotFound(w, r)
		return
	}
	prevY, prevM, nextY, nextM := y, m-1, y, m+1
	if prevM < 1 {
		prevY, prevM = y-1, 12
	}
	if nextM > 12 {
		nextY, nextM = y+1, 1
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><title>%s %d</title></head><body><h1>%s %d</h1>
<p>Events of %s in the year %d: meeting number %d, review number %d, release %d.%d.</p>
<a href="/calendar/%d/%02d">previous month</a> <a href="/calendar/%d/%02d">next month</a>
</body></html>
`, monthNames[m-1], y, monthNames[m-1], y, monthNames[m-1], y, y*12+m, y*7+m*3, y%100, m,
		prevY, prevM, nextY, nextM)
}

func (h *Handler) burst(w http.ResponseWriter, p string) {
	h.mu.Lock()
	h.bursts[p]++
	n := h.bursts[p]
	h.mu.Unlock()
	if n <= h.o.BurstLength {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	page(w, "text/html; charset=utf-8", "After the burst", "the server recovered after a burst of errors")
}

// reset takes over the connection, writes prefix (possibly nothing) and
// closes it with SO_LINGER 0, so the peer sees a TCP reset.
func (h *Handler) reset(w http.ResponseWriter, prefix string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot hijack: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if prefix != "" {
		buf.WriteString(prefix)
		buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// robotsHang serves the second host: /robots.txt never answers (until the
// client gives up), every other path is an ordinary page.
func robotsHang(maxHang time.Duration, hits func(string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits(r.URL.Path)
		if r.URL.Path == "/robots.txt" {
			ctx, cancel := context.WithTimeout(r.Context(), maxHang)
			defer cancel()
			<-ctx.Done()
			return
		}
		page(w, "text/html; charset=utf-8", "Behind a hanging robots.txt",
			"this page is only reachable if robots.txt answers")
	})
}

// Server is the running pair of hostile hosts.
type Server struct {
	// URL is the main host's base URL ("http://127.0.0.1:PORT").
	URL string
	// RobotsURL is the base URL of the host whose robots.txt never answers.
	RobotsURL string
	// UnresolvableURL is a URL on a host that does not resolve.
	UnresolvableURL string

	h        *Handler
	servers  []*http.Server
	serving  sync.WaitGroup // Serve goroutines
	inflight sync.WaitGroup // handlers running

	mu         sync.Mutex
	robotsHits map[string]int
	closeOnce  sync.Once
	closeErr   error
}

// Start listens on o.Addr and o.RobotsAddr and serves the hostile hosts until
// Close.
func Start(o Options) (*Server, error) {
	o = o.withDefaults()
	s := &Server{h: NewHandler(o), robotsHits: map[string]int{}, UnresolvableURL: "http://" + UnresolvableHost + "/"}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("hostile: listen %s: %w", o.Addr, err)
	}
	rln, err := net.Listen("tcp", o.RobotsAddr)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("hostile: listen %s: %w", o.RobotsAddr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.RobotsURL = "http://" + rln.Addr().String()
	quiet := log.New(io.Discard, "", 0) // resets and aborted bodies are the point
	s.servers = []*http.Server{
		{Handler: s.track(s.h), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet},
		{Handler: s.track(robotsHang(o.MaxHang, s.robotsHit)), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet},
	}
	for i, l := range []net.Listener{ln, rln} {
		srv := s.servers[i]
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			srv.Serve(l)
		}()
	}
	return s, nil
}

// track counts running handlers so that Close can wait for them.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) robotsHit(p string) {
	s.mu.Lock()
	s.robotsHits[p]++
	s.mu.Unlock()
}

// Handler returns the main host's handler (for Hits and Paths).
func (s *Server) Handler() *Handler { return s.h }

// RobotsHits returns the number of requests to path on the hanging-robots host.
func (s *Server) RobotsHits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.robotsHits[path]
}

// Close closes every listener and connection (which ends the hanging
// handlers) and waits for the servers to stop.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, srv := range s.servers {
			if err := srv.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.serving.Wait()
		s.inflight.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
