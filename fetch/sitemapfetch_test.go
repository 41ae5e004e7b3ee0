package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// FetchSitemap bounds the body by its own limit (decoded bytes), and keeps
// a 2xx body that breaks off; Fetch, on the same responses, keeps its page
// limit and returns no result for a broken body.
func TestFetchSitemap(t *testing.T) {
	const pageLimit = 64 << 10 // newTestFetcher's MaxBodySize
	big := strings.Repeat("x", 3*pageLimit)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(strings.Repeat(" ", 8*pageLimit)))
	zw.Close()
	broken := strings.Repeat("y", 1000)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(big))
		case "/bomb": // 512 KiB of white space, a few hundred bytes gzipped
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
		case "/broken": // 1000 bytes of 2000 announced, then the connection closes
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n%s", broken)
			buf.Flush()
		case "/missing": // a 404 is a result, its body read as a page's
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(big))
		}
	}))
	f := newTestFetcher(t, nil)
	ctx := context.Background()

	res, err := f.FetchSitemap(ctx, srv.URL+"/big", 4*pageLimit)
	if err != nil || res.Truncated || string(res.RawBody) != big {
		t.Errorf("big, sitemap: err %v, truncated %v, %d bytes: want all %d", err, res != nil && res.Truncated, len(res.RawBody), len(big))
	}
	if res, err := f.Fetch(ctx, srv.URL+"/big"); sitemapClass(err) != ClassTooLarge || len(res.RawBody) != pageLimit {
		t.Errorf("big, page: err %v: want too_large at %d bytes", err, pageLimit)
	}
	res, err = f.FetchSitemap(ctx, srv.URL+"/big", 100)
	if sitemapClass(err) != ClassTooLarge || !res.Truncated || string(res.RawBody) != big[:100] {
		t.Errorf("big, sitemap limit 100: err %v, want too_large with the first 100 bytes", err)
	}
	res, err = f.FetchSitemap(ctx, srv.URL+"/bomb", 2*pageLimit)
	if sitemapClass(err) != ClassTooLarge || len(res.RawBody) != 2*pageLimit {
		t.Errorf("bomb: err %v: want too_large at %d decoded bytes", err, 2*pageLimit)
	}
	res, err = f.FetchSitemap(ctx, srv.URL+"/broken", 4*pageLimit)
	if err == nil || res == nil || !res.Partial || res.Status != 200 || string(res.RawBody) != broken {
		t.Errorf("broken, sitemap: err %v, result %+v: want the 1000 bytes that arrived, partial", err, res)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/broken"); err == nil || res != nil {
		t.Errorf("broken, page: err %v, result %v: want an error alone", err, res)
	}
	res, err = f.FetchSitemap(ctx, srv.URL+"/missing", 4*pageLimit)
	if err != nil || res.Status != 404 || res.Partial || string(res.RawBody) != big {
		t.Errorf("missing: err %v, result %+v", err, res)
	}
	if _, err := f.FetchSitemap(ctx, srv.URL+"/big", 0); err == nil {
		t.Error("a sitemap limit of 0 accepted")
	}
}

func sitemapClass(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Class
	}
	return ""
}
