package hostile

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(Options{DripInterval: 50 * time.Millisecond, BurstLength: 2})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func client() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{DisableCompression: true, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type result struct {
	status  int
	header  http.Header
	body    []byte
	err     error // from the request or from reading the body
	elapsed time.Duration
}

func get(tb testing.TB, c *http.Client, u string, timeout time.Duration, maxBody int64) result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return result{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err, elapsed: time.Since(start)}
}

// bombPrefix is how much of /gzip-bomb's gzip TestHorrors reads.
const bombPrefix = 64 << 10

func TestHorrors(t *testing.T) {
	s := start(t)
	c := client()
	// The cases whose point is a timeout wait 300 ms; every other answer
	// comes at once, and its timeout only bounds a hang, however loaded the
	// machine (one second was overrun under -race beside other tests).
	const answer = 30 * time.Second
	tests := []struct {
		path    string
		timeout time.Duration
		check   func(t *testing.T, r result)
	}{
		{"/", answer, func(t *testing.T, r result) {
			for _, h := range Horrors() {
				if !strings.Contains(string(r.body), `href="`+h.Path+`"`) {
					t.Errorf("index lacks a link to %s", h.Path)
				}
			}
			if !strings.Contains(string(r.body), UnresolvableHost) {
				t.Errorf("index lacks the unresolvable host")
			}
		}},
		{"/slow-drip", 300 * time.Millisecond, func(t *testing.T, r result) {
			if r.err == nil || len(r.body) > 10 {
				t.Errorf("slow drip: err %v after %d bytes, want a timeout after a few bytes", r.err, len(r.body))
			}
		}},
		{"/endless", answer, func(t *testing.T, r result) {
			if r.err != nil || len(r.body) != 1<<20 {
				t.Errorf("endless: %d bytes, err %v; want the 1 MiB limit reached", len(r.body), r.err)
			}
		}},
		{"/huge-length-hang", 300 * time.Millisecond, func(t *testing.T, r result) {
			if r.header.Get("Content-Length") != "10737418240" || r.err == nil {
				t.Errorf("huge-length-hang: Content-Length %q err %v", r.header.Get("Content-Length"), r.err)
			}
		}},
		{"/huge-length-close", answer, func(t *testing.T, r result) {
			if !errors.Is(r.err, io.ErrUnexpectedEOF) {
				t.Errorf("huge-length-close: err %v, want unexpected EOF", r.err)
			}
		}},
		{"/gzip-bomb", answer, func(t *testing.T, r result) {
			// The first bombPrefix bytes of gzip only (the whole stream is
			// 1 GB through the compressor: seconds of the server's CPU, and
			// half a minute under the race detector); TestGzipBombInflates
			// reads 64 MiB of it inflated.
			if r.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("gzip-bomb: Content-Encoding %q", r.header.Get("Content-Encoding"))
			}
			if len(r.body) != bombPrefix {
				t.Fatalf("gzip-bomb: %d bytes of gzip, err %v; want the %d read", len(r.body), r.err, bombPrefix)
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, zr)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("gzip-bomb: %d bytes inflated from its first %d, err %v; want the stream cut short", n, bombPrefix, err)
			}
			if n < 500*bombPrefix {
				t.Errorf("gzip-bomb: its first %d bytes of gzip inflate to %d, want at least 500 times as many", bombPrefix, n)
			}
		}},
		{"/redirect-loop/a", answer, location("/redirect-loop/b")},
		{"/redirect-loop/b", answer, location("/redirect-loop/a")},
		{"/redirect-self", answer, location("/redirect-self")},
		{"/chain/1", answer, location("/chain/2")},
		{"/chain/30", answer, location("/chain/31")},
		{"/chain/31", answer, status(200)},
		{"/chain/32", answer, status(404)},
		{"/redirect-forever/1", answer, location("/redirect-forever/2")},
		{"/redirect-forever/1000", answer, location("/redirect-forever/1001")},
		{"/redirect-forever/1001", answer, status(404)},
		{"/redirect-ftp", answer, location("ftp://ftp.example.com/pub/file.html")},
		{"/redirect-file", answer, location("file:///etc/passwd")},
		{"/redirect-data", answer, location("data:text/html,%3Ch1%3Einjected%3C%2Fh1%3E")},
		{"/redirect-javascript", answer, location("javascript:alert(1)")},
		{"/binary-as-html", answer, func(t *testing.T, r result) {
			if len(r.body) != BinarySize || r.header.Get("Content-Type") != "text/html" {
				t.Errorf("binary: %d bytes as %q", len(r.body), r.header.Get("Content-Type"))
			}
		}},
		{"/one-line", answer, func(t *testing.T, r result) {
			if r.header.Get("Content-Length") != "5242880" || strings.Contains(string(r.body), "\n") {
				t.Errorf("one-line: Content-Length %q, newline %v", r.header.Get("Content-Length"), strings.Contains(string(r.body), "\n"))
			}
		}},
		{"/deep-dom", answer, func(t *testing.T, r result) {
			if n := strings.Count(string(r.body), "<div>"); n != DeepDOMDepth {
				t.Errorf("deep-dom: %d divs", n)
			}
		}},
		{"/calendar/2024/12", answer, func(t *testing.T, r result) {
			b := string(r.body)
			if !strings.Contains(b, `href="/calendar/2024/11"`) || !strings.Contains(b, `href="/calendar/2025/01"`) {
				t.Errorf("calendar links: %s", b)
			}
		}},
		{"/calendar/2024/13", answer, status(404)},
		{"/burst-5xx", answer, status(503)},
		{"/burst-5xx", answer, status(503)},
		{"/burst-5xx", answer, status(200)},
		{"/always-500", answer, status(500)},
		{"/reset", answer, failed},
		{"/reset-mid-body", answer, failed},
		{"/empty", answer, func(t *testing.T, r result) {
			if r.status != 200 || len(r.body) != 0 {
				t.Errorf("empty: %d, %d bytes", r.status, len(r.body))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(strings.Trim(tc.path, "/"), func(t *testing.T) {
			max := int64(1 << 20)
			if tc.path == "/gzip-bomb" {
				max = bombPrefix
			}
			tc.check(t, get(t, c, s.URL+tc.path, tc.timeout, max))
		})
	}
	if n := s.Handler().Hits("/burst-5xx"); n != 3 {
		t.Errorf("Hits(/burst-5xx) = %d, want 3", n)
	}
	if n := s.Handler().Hits("/chain/"); n != 4 {
		t.Errorf("Hits(/chain/) = %d, want 4", n)
	}
}

func location(want string) func(*testing.T, result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.status < 300 || r.status > 399 || r.header.Get("Location") != want {
			t.Errorf("status %d Location %q, want a redirect to %q", r.status, r.header.Get("Location"), want)
		}
	}
}

func status(want int) func(*testing.T, result) {
	return func(t *testing.T, r result) {
		t.Helper()
		if r.err != nil || r.status != want {
			t.Errorf("status %d err %v, want %d", r.status, r.err, want)
		}
	}
}

func failed(t *testing.T, r result) {
	t.Helper()
	if r.err == nil {
		t.Errorf("status %d with %d bytes, want a connection error", r.status, len(r.body))
	}
}

func TestGzipBombInflates(t *testing.T) {
	s := start(t)
	resp, err := client().Get(s.URL + "/gzip-bomb")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	counted := &countReader{r: resp.Body}
	zr, err := gzip.NewReader(counted)
	if err != nil {
		t.Fatal(err)
	}
	const inflate = 64 << 20
	n, err := io.Copy(io.Discard, io.LimitReader(zr, inflate))
	if err != nil || n != inflate {
		t.Fatalf("inflated %d bytes, err %v", n, err)
	}
	if ratio := float64(n) / float64(counted.n); ratio < 500 {
		t.Errorf("compression ratio %.0f (%d bytes on the wire), want >= 500", ratio, counted.n)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestRobotsHostHangs(t *testing.T) {
	s := start(t)
	c := client()
	r := get(t, c, s.RobotsURL+"/robots.txt", 200*time.Millisecond, 1<<10)
	if r.err == nil {
		t.Errorf("robots.txt answered %d", r.status)
	}
	if r := get(t, c, s.RobotsURL+"/page", time.Second, 1<<10); r.status != 200 {
		t.Errorf("page behind the robots host: %d %v", r.status, r.err)
	}
	if s.RobotsHits("/robots.txt") != 1 || s.RobotsHits("/page") != 1 {
		t.Errorf("robots host hits: %d, %d", s.RobotsHits("/robots.txt"), s.RobotsHits("/page"))
	}
}

func TestCloseEndsHangingHandlers(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := client().Get(s.URL + "/huge-length-hang")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for s.Handler().Hits("/huge-length-hang") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	// A Close that waited for the hanging handler would never return; one
	// that returns, on however loaded a machine, is well inside this.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Close took %s", d)
	}
}

func BenchmarkGzipBombMiB(b *testing.B) {
	s := start(b)
	c := client()
	b.ReportAllocs()
	b.SetBytes(1 << 20)
	for b.Loop() {
		resp, err := c.Get(s.URL + "/gzip-bomb")
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, io.LimitReader(zr, 1<<20))
		resp.Body.Close()
	}
}
