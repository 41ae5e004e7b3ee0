package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wireServer is a loopback HTTP/1.1 server on a raw listener that counts
// the connections it accepted and the bytes each brought, so that a test
// can tell a request never written from one written and not answered.
type wireServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	conns    []net.Conn
	closed   int // connections the client closed (or that failed)
	bytes    int // bytes received on all connections
	requests int // request heads received
}

func startWire(t *testing.T) *wireServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &wireServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

type countingReader struct {
	r io.Reader
	s *wireServer
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.s.mu.Lock()
	c.s.bytes += n
	c.s.mu.Unlock()
	return n, err
}

func (s *wireServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		c.Close()
		s.mu.Lock()
		s.closed++
		s.mu.Unlock()
	}()
	br := bufio.NewReader(countingReader{c, s})
	for {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

func (s *wireServer) url(path string) string { return "http://" + s.ln.Addr().String() + path }

// counts waits until the server accepted at least made connections and all
// but open of them are done (closed by the client), then returns
// connections, bytes and requests received.
func (s *wireServer) counts(t *testing.T, made, open int) (conns, bytes, requests int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		conns, closed, bytes, requests := len(s.conns), s.closed, s.bytes, s.requests
		s.mu.Unlock()
		if (conns >= made && conns-closed <= open) || time.Now().After(deadline) {
			return conns, bytes, requests
		}
	}
}

var errLeaseGone = errors.New("the lease is gone")

// countFence returns a fence that fails with fail (nil: passes) and counts
// its calls.
func countFence(calls *atomic.Int64, fail error) Fence {
	return func(context.Context) error {
		calls.Add(1)
		return fail
	}
}

// TestFenceStopsRequestUnwritten: a fence that fails stops the request with
// nothing written, on a new connection and on a kept-alive one, and the
// transport does not retry it; a fence that passes lets it go; a fetch
// without one is not asked.
func TestFenceStopsRequestUnwritten(t *testing.T) {
	s := startWire(t)
	f := newTestFetcher(t, nil)
	ctx := context.Background()

	var calls atomic.Int64
	_, err := f.Fetch(WithFence(ctx, countFence(&calls, errLeaseGone)), s.url("/a"))
	wantClass(t, err, ClassFenced)
	if !errors.Is(err, ErrFenced) || !errors.Is(err, errLeaseGone) {
		t.Errorf("err = %v, want ErrFenced wrapping the fence's error", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fence asked %d times, want once", n)
	}
	if conns, bytes, reqs := s.counts(t, 1, 0); conns != 1 || bytes != 0 || reqs != 0 {
		t.Errorf("fenced on a new connection: the server had %d connections, %d bytes, %d requests; want 1, 0, 0", conns, bytes, reqs)
	}

	calls.Store(0)
	res, err := f.Fetch(WithFence(ctx, countFence(&calls, nil)), s.url("/b"))
	if err != nil || res.Status != 200 || string(res.Body) != "ok" {
		t.Fatalf("fence passing: %v %+v", err, res)
	}
	_, bytesBefore, _ := s.counts(t, 2, 1)
	if n := calls.Load(); n != 1 {
		t.Errorf("fence asked %d times, want once", n)
	}

	// The kept-alive connection of /b is handed to /c: the fence closes it.
	calls.Store(0)
	_, err = f.Fetch(WithFence(ctx, countFence(&calls, errLeaseGone)), s.url("/c"))
	wantClass(t, err, ClassFenced)
	conns, bytes, reqs := s.counts(t, 2, 0)
	if conns != 2 || bytes != bytesBefore || reqs != 1 || calls.Load() != 1 {
		t.Errorf("fenced on a kept-alive connection: %d connections, %d bytes (%d before), %d requests, fence asked %d times; want 2, unchanged, 1, once",
			conns, bytes, bytesBefore, reqs, calls.Load())
	}

	if _, err := f.Fetch(ctx, s.url("/d")); err != nil {
		t.Fatalf("without a fence: %v", err)
	}
	if _, _, reqs := s.counts(t, 3, 1); reqs != 2 {
		t.Errorf("%d requests after an unfenced fetch, want 2", reqs)
	}
}

// slowResolver resolves every name to 127.0.0.1 after delay, and notes when
// it answered.
type slowResolver struct {
	delay time.Duration
	mu    sync.Mutex
	done  time.Time
}

func (r *slowResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	select {
	case <-time.After(r.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.mu.Lock()
	r.done = time.Now()
	r.mu.Unlock()
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// TestFenceAfterNameAndConnect: the fence is asked once the name is resolved
// and the connection made (the server has accepted it), not before: a slow
// resolution is outside the window it closes.
func TestFenceAfterNameAndConnect(t *testing.T) {
	s := startWire(t)
	r := &slowResolver{delay: 200 * time.Millisecond}
	f := newTestFetcher(t, func(o *Options) { o.Resolver = r })
	_, port, _ := net.SplitHostPort(s.ln.Addr().String())
	var askedAt time.Time
	var acceptedBefore int
	fence := func(context.Context) error {
		askedAt = time.Now()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			s.mu.Lock()
			acceptedBefore = len(s.conns)
			s.mu.Unlock()
			if acceptedBefore > 0 {
				break
			}
		}
		return nil
	}
	start := time.Now()
	if _, err := f.Fetch(WithFence(context.Background(), fence), "http://slow-name.test:"+port+"/"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	resolved := r.done
	r.mu.Unlock()
	if askedAt.IsZero() || askedAt.Before(resolved) || askedAt.Sub(start) < r.delay {
		t.Errorf("fence asked %v after the start, the name resolved %v after it: want the fence after the name",
			askedAt.Sub(start), resolved.Sub(start))
	}
	if acceptedBefore != 1 {
		t.Errorf("the server had accepted %d connections when the fence was asked, want 1", acceptedBefore)
	}
	if _, _, reqs := s.counts(t, 1, 1); reqs != 1 {
		t.Errorf("%d requests, want 1", reqs)
	}
}

// TestFenceHTTP2: over HTTP/2 (net/http asks GotConn from its HTTP/2 client)
// a failing fence stops the request before the server's handler sees it.
func TestFenceHTTP2(t *testing.T) {
	var handled atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
		ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	f := newTestFetcher(t, func(o *Options) { o.Transport = tr })
	ctx := context.Background()
	var calls atomic.Int64
	res, err := f.Fetch(WithFence(ctx, countFence(&calls, nil)), srv.URL+"/")
	if err != nil || string(res.Body) != "HTTP/2.0" {
		t.Fatalf("fence passing over HTTP/2: %v %+v", err, res)
	}
	// The fence of a request over the kept HTTP/2 connection fails.
	_, err = f.Fetch(WithFence(ctx, countFence(&calls, errLeaseGone)), srv.URL+"/again")
	wantClass(t, err, ClassFenced)
	if n := handled.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once (the fenced request not sent)", n)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("fence asked %d times, want 2", n)
	}
}

// TestFenceUntracedTransport: an injected RoundTripper that does not report
// GotConn is asked the fence right before RoundTrip.
func TestFenceUntracedTransport(t *testing.T) {
	var trips atomic.Int64
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		trips.Add(1)
		return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
			Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
	f := newTestFetcher(t, func(o *Options) { o.Transport = inner })
	var calls atomic.Int64
	_, err := f.Fetch(WithFence(context.Background(), countFence(&calls, errLeaseGone)), "http://example.test/")
	wantClass(t, err, ClassFenced)
	if trips.Load() != 0 || calls.Load() != 1 {
		t.Errorf("%d round trips, fence asked %d times; want 0 and once", trips.Load(), calls.Load())
	}
	if _, err := f.Fetch(WithFence(context.Background(), countFence(&calls, nil)), "http://example.test/"); err != nil || trips.Load() != 1 {
		t.Errorf("fence passing: %v, %d round trips", err, trips.Load())
	}
}

// TestRobotsFenced: a robots.txt request its fence stopped is not sent and
// not cached (Get returns ErrFenced); the next Get requests it.
func TestRobotsFenced(t *testing.T) {
	s := startWire(t)
	f := newTestFetcher(t, nil)
	c := NewRobotsCache(f, RobotsOptions{}, nil, nil)
	u, _ := url.Parse(s.url("/page"))
	var calls atomic.Int64
	_, fetched, err := c.Get(WithFence(context.Background(), countFence(&calls, errLeaseGone)), u)
	if !errors.Is(err, ErrFenced) || fetched {
		t.Fatalf("fenced robots.txt: fetched %v, err %v; want not fetched, ErrFenced", fetched, err)
	}
	if _, _, reqs := s.counts(t, 1, 0); reqs != 0 {
		t.Errorf("%d requests, want none", reqs)
	}
	r, fetched, err := c.Get(WithFence(context.Background(), countFence(&calls, nil)), u)
	if err != nil || !fetched || r == nil {
		t.Fatalf("second Get: fetched %v, err %v", fetched, err)
	}
	if _, _, reqs := s.counts(t, 2, 1); reqs != 1 || calls.Load() != 2 {
		t.Errorf("%d requests, fence asked %d times; want 1 and 2", reqs, calls.Load())
	}
}

// BenchmarkFetchFence: what a fence that passes at once (a fresh lease
// check: no round trip) adds to a loopback fetch over a kept-alive
// connection: the context value, the cancel and the trace hook.
func BenchmarkFetchFence(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><p>a page</p></body></html>")
	}))
	defer srv.Close()
	f := newTestFetcher(b, nil)
	var mu sync.Mutex
	last := time.Now()
	fresh := func(context.Context) error { // leaseFence.check's fresh path
		now := time.Now()
		mu.Lock()
		l := last
		mu.Unlock()
		if now.Sub(l) > time.Hour {
			return errLeaseGone
		}
		return nil
	}
	for _, fenced := range []bool{false, true} {
		b.Run(fmt.Sprintf("fence=%v", fenced), func(b *testing.B) {
			ctx := context.Background()
			if fenced {
				ctx = WithFence(ctx, fresh)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Fetch(ctx, srv.URL+"/"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
