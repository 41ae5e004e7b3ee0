package loopweb

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkServe measures keep-alive GETs of a small page, a directory
// listing and a page with rewritten links, request log included.
func BenchmarkServe(b *testing.B) {
	for _, bc := range []struct{ name, path string }{
		{"file", "/site/page.html"},
		{"listing", "/site/list/"},
		{"rewritten", "/site/blog.html"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, c := startTest(b, Options{})
			u := w.URL("127.0.0.2", bc.path)
			var n int64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := c.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				n, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			b.SetBytes(n)
		})
	}
}
