package fetch

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestFetchIf: the validators of a stored response go out as If-None-Match
// and If-Modified-Since (a Last-Modified in the future, or later than the
// response that gave it, is not sent); a server's 304 comes back as a result
// without a body; a redirect does not carry them to another URL.
func TestFetchIf(t *testing.T) {
	t.Parallel()
	const lm = "Tue, 24 Nov 2026 10:00:00 GMT"
	lmTime, _ := http.ParseTime(lm)
	var mu sync.Mutex
	var seen []http.Header
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		w.Header().Set("ETag", `W/"v1"`)
		w.Header().Set("Last-Modified", lm)
		inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		if inm == `W/"v1"` || (inm == "" && ims == lm) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>version one</p>"))
	}))
	f := newTestFetcher(t, nil)
	ctx := context.Background()

	first, err := f.Fetch(ctx, srv.URL+"/page")
	if err != nil || first.Status != 200 {
		t.Fatalf("plain fetch: %v %v", first, err)
	}
	v := ValidatorsOf(first.Header)
	if v != (Validators{ETag: `W/"v1"`, LastModified: lm}) || v.Empty() {
		t.Fatalf("validators %+v", v)
	}
	for _, tc := range []struct {
		name    string
		v       Validators
		status  int
		inm, im string
	}{
		{"both", v, 304, `W/"v1"`, lm},
		{"etag only", Validators{ETag: v.ETag}, 304, `W/"v1"`, ""},
		{"date only", Validators{LastModified: lm}, 304, "", lm},
		{"stale etag", Validators{ETag: `"v0"`}, 200, `"v0"`, ""},
		{"date that is not an HTTP-date is not sent", Validators{LastModified: "yesterday"}, 200, "", ""},
		{"none", Validators{}, 200, "", ""},
		{"date in the future is not sent", Validators{LastModified: "Fri, 01 Jan 2100 00:00:00 GMT"}, 200, "", ""},
		{"date later than its response is not sent", Validators{LastModified: lm, Received: lmTime.Add(-time.Second)}, 200, "", ""},
		{"date of its response is sent", Validators{LastModified: lm, Received: lmTime}, 304, "", lm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			res, err := f.FetchIf(ctx, srv.URL+"/page", tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || res.NotModified() != (tc.status == 304) {
				t.Errorf("status %d, want %d", res.Status, tc.status)
			}
			if tc.status == 304 && len(res.RawBody) != 0 {
				t.Errorf("304 with a body of %d bytes", len(res.RawBody))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || seen[0].Get("If-None-Match") != tc.inm || seen[0].Get("If-Modified-Since") != tc.im {
				t.Errorf("server saw %v", seen)
			}
			if got := res.RequestHeader.Get("If-None-Match"); got != tc.inm {
				t.Errorf("recorded request If-None-Match %q, want %q", got, tc.inm)
			}
		})
	}

	// Following a redirect, the target is asked unconditionally: the
	// validators belong to the first URL.
	mu.Lock()
	seen = nil
	mu.Unlock()
	res, err := f.FetchIf(ctx, srv.URL+"/moved", v)
	if err != nil || res.Status != 200 {
		t.Fatalf("redirected fetch: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].Get("If-None-Match") == "" || seen[1].Get("If-None-Match") != "" || seen[1].Get("If-Modified-Since") != "" {
		t.Errorf("redirect chain headers: %v", seen)
	}
}
