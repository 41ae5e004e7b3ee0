package fetch

import (
	"context"
	"net/http"
	"time"
)

// Validators are what a server said identifies the version of a page it sent
// (RFC 9110 section 8.8): its entity tag and its last modification date, as
// received. A recrawl sends them back so that an unchanged page costs a 304
// Not Modified without a body.
type Validators struct {
	ETag         string // ETag response header, quotes and W/ prefix included; "" if none
	LastModified string // Last-Modified response header (an HTTP-date); "" if none
	// Received is when the response that gave them arrived; zero when
	// unknown. A Last-Modified later than it (or than now) is not sent.
	Received time.Time
}

// ValidatorsOf returns the validators of a response's header.
func ValidatorsOf(h http.Header) Validators {
	return Validators{ETag: h.Get("ETag"), LastModified: h.Get("Last-Modified")}
}

// set adds If-None-Match and If-Modified-Since to a request's header. Both
// are sent when both are known: a server that understands If-None-Match
// ignores If-Modified-Since (RFC 9110 section 13.1.3).
func (v Validators) set(h http.Header) {
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if v.usableLastModified() {
		h.Set("If-Modified-Since", v.LastModified)
	}
}

// usableLastModified reports whether LastModified can be sent. One that is
// not an HTTP-date is not, as the server would have to ignore it. Nor is one
// in the future, later than the response that gave it or than now: a server
// must not send such a date (RFC 9110 section 8.8.2.1), and one that compares
// it with a page's date answers 304 until that date has passed, whatever
// changed.
func (v Validators) usableLastModified() bool {
	t, err := http.ParseTime(v.LastModified)
	if err != nil {
		return false
	}
	limit := time.Now()
	if !v.Received.IsZero() && v.Received.Before(limit) {
		limit = v.Received
	}
	return !t.After(limit)
}

// dropValidators removes the conditional headers from a redirected request.
func dropValidators(h http.Header) {
	h.Del("If-None-Match")
	h.Del("If-Modified-Since")
}

// Empty reports whether there is nothing to make a request conditional on.
func (v Validators) Empty() bool {
	return v.ETag == "" && !v.usableLastModified()
}

// FetchIf is Fetch made conditional on v: a server whose page still matches v
// answers 304 Not Modified, returned as a Result with Status 304 and no body
// (Status 304 is not an error). With empty v it is Fetch.
func (f *Fetcher) FetchIf(ctx context.Context, rawURL string, v Validators) (*Result, error) {
	res, _, err := f.do(ctx, rawURL, f.pageLimits(), v)
	return res, err
}

// NotModified reports whether the result is a 304 Not Modified.
func (r *Result) NotModified() bool { return r != nil && r.Status == http.StatusNotModified }
