package loopweb

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

const (
	pageHTML  = "<html><body><p>the page</p></body></html>\n"
	indexHTML = "<html><body><h1>site index</h1></body></html>\n"
	blogHTML  = `<a href="http://127.0.0.3/x/">x</a> <a href="http://127.0.0.30/y">y</a> <a href="http://127.0.0.3:81/z">z</a>`
)

var testTree = map[string]string{
	"127.0.0.2/site/index.html":         indexHTML,
	"127.0.0.2/site/page.html":          pageHTML,
	"127.0.0.2/site/alias.html":         "->page.html",
	"127.0.0.2/site/blog.html":          blogHTML,
	"127.0.0.2/site/notes.txt":          "plain notes\n",
	"127.0.0.2/site/data.bin":           "\x00\x01",
	"127.0.0.2/site/list/a.txt":         "aaa",
	"127.0.0.2/site/list/b/c.html":      pageHTML,
	"127.0.0.2/site/list/.hidden":       "secret",
	"127.0.0.2/site/list/x:y.html":      pageHTML,
	"127.0.0.2/site/list/linked":        "->../../site",
	"127.0.0.2/escape.html":             "->../127.0.0.3/x/index.html",
	"127.0.0.3/x/index.html":            "<p>host three</p>",
	"127.0.0.10/empty/":                 "",
	"10.0.0.1/index.html":               "not loopback",
	"127.0.0.01/index.html":             "not canonical",
	"notanip/index.html":                "ignored",
	"127.0.0.9":                         "a file, not a directory",
	"127.0.0.2/site/list/b/deeper/":     "",
	"127.0.0.2/site/list/b c/":          "",
	"127.0.0.2/site/list/b/deeper/d.js": "var d;",
}

// startTest serves testTree and returns the web and a client that does not
// follow redirects; both are cleaned up with the test.
func startTest(tb testing.TB, o Options) (*Web, *http.Client) {
	tb.Helper()
	root := tb.TempDir()
	testtools.WriteTree(tb, root, testTree)
	w, err := Start(root, o)
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := w.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return w, newClient(tb)
}

// newClient returns a client with its own transport that does not follow
// redirects; its idle connections are closed when the test ends.
func newClient(tb testing.TB) *http.Client {
	tb.Helper()
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(tb testing.TB, c *http.Client, method, url string) response {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("User-Agent", "loopweb-test/1.0")
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestHosts(t *testing.T) {
	w, _ := startTest(t, Options{})
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.10"}
	if got := w.Hosts(); !slices.Equal(got, want) {
		t.Fatalf("Hosts() = %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for _, ip := range want {
		base := w.BaseURL(ip)
		if !strings.HasPrefix(base, "http://"+ip+":") || seen[base] {
			t.Errorf("BaseURL(%s) = %q", ip, base)
		}
		seen[base] = true
		if got := w.URL(ip, "a/b"); got != base+"/a/b" {
			t.Errorf("URL(%s, a/b) = %q", ip, got)
		}
	}
	if got := w.BaseURL("127.0.0.9"); got != "" {
		t.Errorf("BaseURL of an unserved host = %q, want empty", got)
	}
}

func TestServe(t *testing.T) {
	w, c := startTest(t, Options{Robots: map[string]string{"127.0.0.2": "User-agent: *\nDisallow: /private/\n"}})
	h2, h3 := "127.0.0.2", "127.0.0.3"
	tests := []struct {
		name, method, host, path string
		status                   int
		body                     string // exact body when set
		contains, absent         []string
		ctype, location          string
	}{
		{name: "index dir", method: "GET", host: h2, path: "/site/", status: 200, body: indexHTML, ctype: "text/html; charset=utf-8"},
		{name: "index file direct", method: "GET", host: h2, path: "/site/index.html", status: 200, body: indexHTML},
		{name: "dir redirect", method: "GET", host: h2, path: "/site", status: 301, location: "/site/"},
		{name: "dir redirect keeps query", method: "GET", host: h2, path: "/site?a=1", status: 301, location: "/site/?a=1"},
		{name: "dir redirect escaped", method: "GET", host: h2, path: "/site/list/b%20c", status: 301, location: "/site/list/b%20c/"},
		{name: "page", method: "GET", host: h2, path: "/site/page.html", status: 200, body: pageHTML, ctype: "text/html; charset=utf-8"},
		{name: "symlink followed", method: "GET", host: h2, path: "/site/alias.html", status: 200, body: pageHTML},
		{name: "symlinked dir", method: "GET", host: h2, path: "/site/list/linked/page.html", status: 200, body: pageHTML},
		{name: "text type", method: "GET", host: h2, path: "/site/notes.txt", status: 200, ctype: "text/plain; charset=utf-8"},
		{name: "js type", method: "GET", host: h2, path: "/site/list/b/deeper/d.js", status: 200, ctype: "application/javascript; charset=utf-8"},
		{name: "unknown type", method: "GET", host: h2, path: "/site/data.bin", status: 200, ctype: "application/octet-stream"},
		{name: "listing", method: "GET", host: h2, path: "/site/list/", status: 200, ctype: "text/html; charset=utf-8",
			contains: []string{
				"<title>Index of /site/list/</title>",
				`<a href="../">../</a>`,
				`<a href="b/">b/</a>`,
				`<a href="b%20c/">b c/</a>`,
				`<a href="linked/">linked/</a>`,
				`<a href="a.txt">a.txt</a>`,
				`<a href="./x:y.html">x:y.html</a>`,
			},
			absent: []string{".hidden", "c.html"}},
		{name: "listing nested", method: "GET", host: h2, path: "/site/list/b/", status: 200, contains: []string{`<a href="deeper/">deeper/</a>`, `<a href="c.html">c.html</a>`}},
		{name: "empty listing", method: "GET", host: "127.0.0.10", path: "/empty/", status: 200, contains: []string{"Index of /empty/"}},
		{name: "root listing has no parent", method: "GET", host: "127.0.0.10", path: "/", status: 200, contains: []string{`<a href="empty/">empty/</a>`}, absent: []string{"../"}},
		{name: "missing", method: "GET", host: h2, path: "/site/nope.html", status: 404},
		{name: "file with slash", method: "GET", host: h2, path: "/site/page.html/", status: 404},
		{name: "file as dir", method: "GET", host: h2, path: "/site/page.html/x", status: 404},
		{name: "dotdot", method: "GET", host: h2, path: "/site/../site/page.html", status: 400},
		{name: "encoded dotdot", method: "GET", host: h2, path: "/%2e%2e/127.0.0.3/x/index.html", status: 400},
		{name: "symlink escaping host", method: "GET", host: h2, path: "/escape.html", status: 404},
		{name: "other host tree", method: "GET", host: h3, path: "/site/page.html", status: 404},
		{name: "second host", method: "GET", host: h3, path: "/x/", status: 200, body: "<p>host three</p>"},
		{name: "head", method: "HEAD", host: h2, path: "/site/page.html", status: 200, body: ""},
		{name: "head listing", method: "HEAD", host: h2, path: "/site/list/", status: 200, body: ""},
		{name: "post", method: "POST", host: h2, path: "/site/page.html", status: 405},
		{name: "robots", method: "GET", host: h2, path: "/robots.txt", status: 200, body: "User-agent: *\nDisallow: /private/\n", ctype: "text/plain; charset=utf-8"},
		{name: "no robots", method: "GET", host: h3, path: "/robots.txt", status: 404},
		{name: "links rewritten", method: "GET", host: h2, path: "/site/blog.html", status: 200,
			contains: []string{`href="` + w.BaseURL(h3) + `/x/"`, `href="http://127.0.0.30/y"`, `href="http://127.0.0.3:81/z"`},
			absent:   []string{`"http://127.0.0.3/x/"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, c, tt.method, w.BaseURL(tt.host)+tt.path)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if tt.status == 200 && tt.body != "" && r.body != tt.body {
				t.Errorf("body = %q, want %q", r.body, tt.body)
			}
			if tt.method == "HEAD" {
				if r.body != "" {
					t.Errorf("HEAD body = %q", r.body)
				}
				if r.header.Get("Content-Length") == "" {
					t.Error("HEAD without Content-Length")
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(r.body, s) {
					t.Errorf("body lacks %q:\n%s", s, r.body)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(r.body, s) {
					t.Errorf("body has %q:\n%s", s, r.body)
				}
			}
			if tt.ctype != "" && r.header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type = %q, want %q", r.header.Get("Content-Type"), tt.ctype)
			}
			if tt.location != "" && r.header.Get("Location") != tt.location {
				t.Errorf("Location = %q, want %q", r.header.Get("Location"), tt.location)
			}
		})
	}
}

func TestKeepLoopbackLinks(t *testing.T) {
	w, c := startTest(t, Options{KeepLoopbackLinks: true})
	if r := do(t, c, "GET", w.URL("127.0.0.2", "/site/blog.html")); r.body != blogHTML {
		t.Errorf("body = %q, want the file unchanged", r.body)
	}
}

func TestConditionalGet(t *testing.T) {
	w, c := startTest(t, Options{})
	u := w.URL("127.0.0.2", "/site/page.html")
	first := do(t, c, "GET", u)
	tag := first.header.Get("ETag")
	if tag == "" || first.header.Get("Last-Modified") == "" {
		t.Fatalf("missing validators: %v", first.header)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("If-None-Match", tag)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match status = %d, want 304", resp.StatusCode)
	}
	if got := w.Requests()[1].Status; got != http.StatusNotModified {
		t.Errorf("logged status = %d, want 304", got)
	}
}

func TestRequestLog(t *testing.T) {
	fault := func(ip string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/fault" {
				http.Error(rw, "injected", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(rw, r)
		})
	}
	w, c := startTest(t, Options{Handler: fault})
	before := time.Now()
	calls := []struct {
		method, host, path string
		status             int
	}{
		{"GET", "127.0.0.2", "/site/page.html?x=1", 200},
		{"GET", "127.0.0.3", "/x/", 200},
		{"HEAD", "127.0.0.2", "/site", 301},
		{"GET", "127.0.0.2", "/fault", 503},
		{"GET", "127.0.0.2", "/nope", 404},
	}
	for _, call := range calls {
		do(t, c, call.method, w.BaseURL(call.host)+call.path)
	}
	log := w.Requests()
	if len(log) != len(calls) {
		t.Fatalf("logged %d requests, want %d: %+v", len(log), len(calls), log)
	}
	for i, call := range calls {
		r := log[i]
		if r.Host != call.host || r.Method != call.method || r.Path != call.path || r.Status != call.status {
			t.Errorf("log[%d] = %+v, want %s %s %s -> %d", i, r, call.host, call.method, call.path, call.status)
		}
		if r.UserAgent != "loopweb-test/1.0" {
			t.Errorf("log[%d].UserAgent = %q", i, r.UserAgent)
		}
		if r.Start.Before(before) || r.End.Before(r.Start) {
			t.Errorf("log[%d] times start=%v end=%v (test began %v)", i, r.Start, r.End, before)
		}
		if i > 0 && r.Start.Before(log[i-1].End) {
			t.Errorf("log[%d] starts before log[%d] ended", i, i-1)
		}
	}
	to3 := w.RequestsTo("127.0.0.3")
	if len(to3) != 1 || to3[0].Path != "/x/" {
		t.Errorf("RequestsTo(127.0.0.3) = %+v", to3)
	}
	if got := len(w.RequestsTo("127.0.0.2")); got != 4 {
		t.Errorf("RequestsTo(127.0.0.2) has %d entries, want 4", got)
	}
	log[0].Path = "changed"
	if w.Requests()[0].Path == "changed" {
		t.Error("Requests returned the internal slice, not a copy")
	}
}

// TestInFlight checks that an unfinished request is logged at arrival and
// that Close waits for it.
func TestInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	slow := func(ip string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				close(entered)
				<-release
			}
			next.ServeHTTP(rw, r)
		})
	}
	root := t.TempDir()
	testtools.WriteTree(t, root, testTree)
	w, err := Start(root, Options{Handler: slow})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	var wg sync.WaitGroup
	wg.Add(1)
	var status int
	go func() {
		defer wg.Done()
		resp, err := c.Get(w.URL("127.0.0.2", "/slow"))
		if err != nil {
			t.Errorf("slow request: %v", err)
			return
		}
		status = resp.StatusCode
		resp.Body.Close()
	}()
	<-entered
	log := w.Requests()
	if len(log) != 1 || log[0].Status != 0 || !log[0].End.IsZero() || log[0].Start.IsZero() {
		t.Errorf("in-flight entry = %+v, want Start set, no status, no End", log)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a handler was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if status != http.StatusNotFound { // /slow is not in the tree
		t.Errorf("slow status = %d, want 404", status)
	}
	if log := w.Requests(); log[0].Status != http.StatusNotFound || log[0].End.IsZero() {
		t.Errorf("finished entry = %+v", log[0])
	}
	if _, err := c.Get(w.URL("127.0.0.2", "/site/")); err == nil {
		t.Error("request after Close succeeded")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestKeepAlive(t *testing.T) {
	w, c := startTest(t, Options{})
	conns := 0
	tr := c.Transport.(*http.Transport)
	tr.DialContext = countingDialer(&conns)
	for range 3 {
		do(t, c, "GET", w.URL("127.0.0.2", "/site/page.html"))
	}
	if conns != 1 {
		t.Errorf("3 sequential requests used %d connections, want 1", conns)
	}
}

func TestStartErrors(t *testing.T) {
	empty := t.TempDir()
	testtools.WriteTree(t, empty, map[string]string{"notahost/": "", "10.1.2.3/": ""})
	full := t.TempDir()
	testtools.WriteTree(t, full, map[string]string{"127.0.0.2/": ""})
	tests := []struct {
		name string
		root string
		o    Options
		want string
	}{
		{"missing root", filepath.Join(empty, "absent"), Options{}, "read root"},
		{"no hosts", empty, Options{}, "no IPv4 loopback"},
		{"robots for unserved host", full, Options{Robots: map[string]string{"127.0.0.7": "x"}}, "not a served host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Start(tt.root, tt.o)
			if err == nil {
				w.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func countingDialer(n *int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		*n++
		return d.DialContext(ctx, network, addr)
	}
}

// TestSentBeforeClientHasResponse: a handler that writes its whole body and
// then lingers (as a goroutine waiting for a CPU does) ends after its client
// has the whole response; Sent is no later than that moment, End is, so a
// client's gap between requests is measured from Sent.
func TestSentBeforeClientHasResponse(t *testing.T) {
	body := strings.Repeat("x", 64<<10)
	linger := func(_ string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/linger" {
				next.ServeHTTP(rw, r)
				return
			}
			rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
			io.WriteString(rw, body)
			time.Sleep(200 * time.Millisecond)
		})
	}
	w, c := startTest(t, Options{Handler: linger})
	resp, err := c.Get(w.URL("127.0.0.2", "/linger"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := time.Now()
	if err != nil || len(b) != len(body) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.Requests()[0].End.IsZero() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r := w.Requests()[0]
	if r.Sent.IsZero() || r.Sent.Before(r.Start) || r.Sent.After(got) {
		t.Errorf("Sent %v, want between Start %v and the client's end %v", r.Sent, r.Start, got)
	}
	if !r.End.After(got) {
		t.Errorf("End %v not after the client's end %v: the handler's linger not shown", r.End, got)
	}
}
