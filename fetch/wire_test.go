package fetch

import (
	"net/http"
	"strings"
	"testing"
)

// TestWireBytes: the request names the final URL's target and host once;
// the response drops the transfer headers and states the stored body's length.
func TestWireBytes(t *testing.T) {
	r := &Result{URL: "http://a.test/x", FinalURL: "http://a.test/y%20z?q=1", Status: 200, Proto: "HTTP/1.1",
		Header:        http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {"3"}, "Content-Type": {"text/html"}},
		RequestHeader: http.Header{"Host": {"a.test"}, "User-Agent": {"hs"}},
		RawBody:       []byte("hello")}
	req := string(r.WireRequest())
	if !strings.HasPrefix(req, "GET /y%20z?q=1 HTTP/1.1\r\nHost: a.test\r\n") || strings.Count(req, "Host:") != 1 ||
		!strings.Contains(req, "User-Agent: hs\r\n") || !strings.HasSuffix(req, "\r\n\r\n") {
		t.Errorf("request:\n%q", req)
	}
	resp := string(r.WireResponse())
	if !strings.HasPrefix(resp, "HTTP/1.1 200 OK\r\n") || strings.Contains(resp, "gzip") ||
		!strings.Contains(resp, "Content-Type: text/html\r\n") || !strings.HasSuffix(resp, "Content-Length: 5\r\n\r\nhello") {
		t.Errorf("response:\n%q", resp)
	}
	s256, s1 := r.PayloadDigests()
	if s256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" || s1 != "VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N" {
		t.Errorf("digests %s %s", s256, s1)
	}
}
