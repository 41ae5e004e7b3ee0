// Package loopweb serves a directory tree as a small multi-host web on
// loopback addresses: the web of `crawler demo`, and of the end-to-end tests
// (internal/testweb holds the test fixtures around it: the shared corpus and
// the mirror chain). It imports no test package, so the binary may link it.
//
// The tree has one sub-directory per host, named after the host's IPv4
// loopback address (root/127.0.0.2/docs/index.html is served as
// http://127.0.0.2:PORT/docs/index.html). Every host gets its own real
// net/http server listening on a free port of its own address, so hosts have
// distinct IPs the way they do on the internet, and every request is logged.
//
// File serving follows what nginx does with the shared corpus: symbolic links
// are followed (they must stay inside the host's directory), a directory
// requested without its trailing slash is redirected with 301, a directory
// with an index.html serves it, a directory without one gets an
// autoindex-style listing, and /x/index.html is served as itself (no redirect
// to ./ as http.FileServer would do).
//
// One deliberate addition: static pages cannot know the free ports chosen at
// run time, so in served HTML every absolute link to a served host written
// without a port ("http://127.0.0.2/guide/") is rewritten to carry that
// host's real port ("http://127.0.0.2:41234/guide/"). The shared corpus has
// no such links; the demo web under testdata/demo uses them for cross-host
// links. Options.KeepLoopbackLinks turns the rewrite off.
package loopweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one entry of the request log.
type Request struct {
	Host      string // the server's IP (e.g. "127.0.0.2")
	Method    string
	Path      string // RequestURI as received
	Status    int    // status code written; 0 while in flight or when the handler aborted without writing
	UserAgent string
	Start     time.Time // arrival
	End       time.Time // completion (the handler returned); zero while in flight
	// Sent is when the response's last write began (End when nothing was
	// written): the client cannot have the whole response before it. End
	// can come later than the client's end of the request (the handler's
	// goroutine may wait for a CPU after its last write), so a gap between
	// a client's requests is measured from Sent.
	Sent time.Time
}

// Options configures Start. The zero value is usable.
type Options struct {
	// Robots maps a host IP to the robots.txt body served at /robots.txt.
	// Hosts absent from the map serve /robots.txt from the tree like any
	// other file, which is a 404 when the tree has none.
	Robots map[string]string
	// Handler, when set, wraps each host's handler (tests inject faults,
	// delays or custom pages). It is called once per host at Start; the
	// request log sits outside it, so injected statuses are logged.
	Handler func(ip string, next http.Handler) http.Handler
	// KeepLoopbackLinks turns off the rewrite of port-less links to served
	// hosts in HTML ("http://127.0.0.2/" to "http://127.0.0.2:PORT/").
	KeepLoopbackLinks bool
	// Logger receives the servers' internal errors; nil discards them.
	Logger *slog.Logger
}

// shutdownGrace bounds the graceful part of Close before connections are
// closed forcibly.
const shutdownGrace = 5 * time.Second

// Web is a set of running loopback servers. Its methods are safe for
// concurrent use.
type Web struct {
	hosts []*host // sorted by address
	byIP  map[string]*host

	serving  sync.WaitGroup // Serve goroutines
	inflight sync.WaitGroup // handlers running

	mu       sync.Mutex
	reqs     []Request
	closed   bool // no new handler may start
	serveErr []error

	closeOnce sync.Once
	closeErr  error
}

type host struct {
	ip   string
	addr netip.Addr
	base string // "http://127.0.0.2:PORT"
	root *os.Root
	ln   net.Listener
	srv  *http.Server
}

// Start serves root, a directory with one sub-directory per IP address.
// Only sub-directories whose names are IPv4 loopback addresses are served;
// each gets its own server listening on IP:0. Call Close when done.
func Start(root string, o Options) (*Web, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("loopweb: read root: %w", err)
	}
	w := &Web{byIP: make(map[string]*host)}
	for _, e := range entries {
		addr, err := netip.ParseAddr(e.Name())
		if err != nil || !addr.Is4() || !addr.IsLoopback() || addr.String() != e.Name() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			w.closeRoots()
			return nil, fmt.Errorf("loopweb: open host dir: %w", err)
		}
		h := &host{ip: e.Name(), addr: addr, root: r}
		w.hosts = append(w.hosts, h)
		w.byIP[h.ip] = h
	}
	if len(w.hosts) == 0 {
		return nil, fmt.Errorf("loopweb: no IPv4 loopback host directories in %s", root)
	}
	slices.SortFunc(w.hosts, func(a, b *host) int { return a.addr.Compare(b.addr) })
	var unknown []error
	for ip := range o.Robots {
		if _, ok := w.byIP[ip]; !ok {
			unknown = append(unknown, fmt.Errorf("loopweb: robots for %q, which is not a served host", ip))
		}
	}
	if len(unknown) > 0 {
		w.closeRoots()
		return nil, errors.Join(unknown...)
	}

	for _, h := range w.hosts {
		ln, err := net.Listen("tcp4", net.JoinHostPort(h.ip, "0"))
		if err != nil {
			w.closeListeners()
			w.closeRoots()
			return nil, fmt.Errorf("loopweb: listen on %s: %w", h.ip, err)
		}
		h.ln = ln
		h.base = "http://" + ln.Addr().String()
	}

	rewrite := linkRewriter(w.hosts, o.KeepLoopbackLinks)
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for _, h := range w.hosts {
		var next http.Handler = &files{root: h.root, rewrite: rewrite}
		if body, ok := o.Robots[h.ip]; ok {
			next = robots(body, next)
		}
		if o.Handler != nil {
			next = o.Handler(h.ip, next)
		}
		h.srv = &http.Server{
			Handler:           w.logged(h.ip, next),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          slog.NewLogLogger(logger.With("host", h.ip).Handler(), slog.LevelWarn),
		}
	}
	for _, h := range w.hosts {
		w.serving.Add(1)
		go func() {
			defer w.serving.Done()
			if err := h.srv.Serve(h.ln); !errors.Is(err, http.ErrServerClosed) {
				w.mu.Lock()
				w.serveErr = append(w.serveErr, fmt.Errorf("loopweb: serve %s: %w", h.ip, err))
				w.mu.Unlock()
			}
		}()
	}
	return w, nil
}

// linkRewriter returns the replacer for port-less links to served hosts, or
// nil when rewriting is off.
func linkRewriter(hosts []*host, off bool) *strings.Replacer {
	if off {
		return nil
	}
	pairs := make([]string, 0, 2*len(hosts))
	for _, h := range hosts {
		pairs = append(pairs, "http://"+h.ip+"/", h.base+"/")
	}
	return strings.NewReplacer(pairs...)
}

// robots serves body at /robots.txt and passes everything else to next.
func robots(body string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, body)
		}
	})
}

// logged records every request in the log and tracks running handlers so
// Close can wait for them.
func (w *Web) logged(ip string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			http.Error(rw, "server closing", http.StatusServiceUnavailable)
			return
		}
		w.inflight.Add(1)
		i := len(w.reqs)
		w.reqs = append(w.reqs, Request{
			Host:      ip,
			Method:    r.Method,
			Path:      r.RequestURI,
			UserAgent: r.UserAgent(),
			Start:     time.Now(),
		})
		w.mu.Unlock()

		rec := &recorder{ResponseWriter: rw}
		finished := false
		defer func() {
			status := rec.status
			if finished && status == 0 {
				status = http.StatusOK
			}
			w.mu.Lock()
			w.reqs[i].Status = status
			w.reqs[i].End = time.Now()
			w.reqs[i].Sent = rec.lastWrite
			if rec.lastWrite.IsZero() {
				w.reqs[i].Sent = w.reqs[i].End
			}
			w.mu.Unlock()
			w.inflight.Done()
		}()
		next.ServeHTTP(rec, r)
		finished = true
	})
}

// recorder remembers the status code written through it.
type recorder struct {
	http.ResponseWriter
	status    int
	lastWrite time.Time // when the last Write began
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.lastWrite = time.Now()
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// BaseURL returns "http://IP:PORT" for a served host, or "" for any other IP.
func (w *Web) BaseURL(ip string) string {
	if h, ok := w.byIP[ip]; ok {
		return h.base
	}
	return ""
}

// URL returns the absolute URL of path on host ip ("" for an unknown host).
func (w *Web) URL(ip, path string) string {
	base := w.BaseURL(ip)
	if base == "" {
		return ""
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return base + path
}

// Hosts returns the IPs served, sorted numerically.
func (w *Web) Hosts() []string {
	ips := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		ips[i] = h.ip
	}
	return ips
}

// Requests returns a copy of the request log, in arrival order.
func (w *Web) Requests() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reqs)
}

// RequestsTo returns the logged requests to host ip, in arrival order.
func (w *Web) RequestsTo(ip string) []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Request
	for _, r := range w.reqs {
		if r.Host == ip {
			out = append(out, r)
		}
	}
	return out
}

// Close shuts every server down: it stops accepting, lets running requests
// finish for a few seconds, then closes the remaining connections, and waits
// for every handler and serving goroutine to return. It is safe to call more
// than once; later calls return the first result.
func (w *Web) Close() error {
	w.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		var errs []error
		var wg sync.WaitGroup
		for _, h := range w.hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := h.srv.Shutdown(ctx); err != nil {
					if cerr := h.srv.Close(); cerr != nil {
						err = errors.Join(err, cerr)
					}
					w.mu.Lock()
					errs = append(errs, fmt.Errorf("loopweb: shut down %s: %w", h.ip, err))
					w.mu.Unlock()
				}
			}()
		}
		wg.Wait()
		w.serving.Wait()
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.inflight.Wait()
		w.closeRoots()
		w.mu.Lock()
		errs = append(errs, w.serveErr...)
		w.mu.Unlock()
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

func (w *Web) closeListeners() {
	for _, h := range w.hosts {
		if h.ln != nil {
			_ = h.ln.Close()
		}
	}
}

func (w *Web) closeRoots() {
	for _, h := range w.hosts {
		_ = h.root.Close()
	}
}

// NoDemoError is StartDemo's error when root holds no SEEDS.txt.
type NoDemoError struct{ Err error }

func (e *NoDemoError) Error() string { return e.Err.Error() }
func (e *NoDemoError) Unwrap() error { return e.Err }

// StartDemo serves the demo web in root (Start) and returns the URLs of the
// seeds its SEEDS.txt lists, one "IP path" per line (# comments).
func StartDemo(root string) (*Web, []string, error) {
	lines, err := os.ReadFile(filepath.Join(root, "SEEDS.txt"))
	if err != nil {
		return nil, nil, &NoDemoError{err}
	}
	w, err := Start(root, Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot serve the demo web: %w", err)
	}
	var seeds []string
	for _, line := range strings.Split(string(lines), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			seeds = append(seeds, w.URL(f[0], f[1]))
		}
	}
	return w, seeds, nil
}
