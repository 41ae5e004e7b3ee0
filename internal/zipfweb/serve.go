package zipfweb

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Server serves a Web: one listener per host address, one http.Server.
type Server struct {
	Web      *Web
	srv      *http.Server
	lns      []net.Listener
	requests atomic.Int64
	pages    atomic.Int64
	host     map[netip.Addr]int
	done     chan error
}

// Listen generates the web of o and serves it: every host address listens
// on o.Port (0: a free port, the same for all, which the pages' links to
// other hosts name).
func Listen(o Options) (*Server, error) {
	port := max(o.Port, 0)
	o = o.withDefaults()
	// A free port on the first address, then the same on the others
	// (tried a few times: another process may hold it on one of them).
	var lns []net.Listener
	var err error
	for range 10 {
		lns, err = listenAll(o.Hosts, port)
		if err == nil || port != 0 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	o.Port = lns[0].Addr().(*net.TCPAddr).Port
	w, err := New(o)
	if err != nil {
		closeAll(lns)
		return nil, err
	}
	s := &Server{Web: w, lns: lns, host: make(map[netip.Addr]int, o.Hosts), done: make(chan error, len(lns))}
	for i := range o.Hosts {
		s.host[netip.MustParseAddr(HostIP(i))] = i
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	for _, ln := range lns {
		go func() { s.done <- s.srv.Serve(ln) }()
	}
	return s, nil
}

func listenAll(hosts, port int) ([]net.Listener, error) {
	var lns []net.Listener
	for i := range hosts {
		ln, err := net.Listen("tcp", net.JoinHostPort(HostIP(i), strconv.Itoa(port)))
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("zipfweb: %w", err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

// Requests returns the number of requests answered, and of pages served
// (200 responses).
func (s *Server) Requests() (requests, pages int64) { return s.requests.Load(), s.pages.Load() }

// Close stops the server.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP answers "/" and "/p/J.html" of the host whose address the
// request came to; anything else (robots.txt included) is 404.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	h := -1
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			if i, ok := s.host[ap.Addr()]; ok {
				h = i
			}
		}
	}
	j := -1
	if r.URL.Path == "/" {
		j = 0
	} else if num, ok := strings.CutPrefix(r.URL.Path, "/p/"); ok {
		if num, ok = strings.CutSuffix(num, ".html"); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 && strconv.Itoa(n) == num {
				j = n
			}
		}
	}
	body, ok := s.Web.Page(h, j)
	if !ok {
		http.NotFound(rw, r)
		return
	}
	s.pages.Add(1)
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.Write(body)
}
