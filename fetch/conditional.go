package fetch

import (
	"context"
	"net/http"
)

// Validators are what a server said identifies the version of a page it sent
// (RFC 9110 section 8.8): its entity tag and its last modification date, as
// received. A recrawl sends them back so that an unchanged page costs a 304
// Not Modified without a body.
type Validators struct {
	ETag         string // ETag response header, quotes and W/ prefix included; "" if none
	LastModified string // Last-Modified response header (an HTTP-date); "" if none
}

// ValidatorsOf returns the validators of a response's header.
func ValidatorsOf(h http.Header) Validators {
	return Validators{ETag: h.Get("ETag"), LastModified: h.Get("Last-Modified")}
}

// set adds If-None-Match and If-Modified-Since to a request's header. Both
// are sent when both are known: a server that understands If-None-Match
// ignores If-Modified-Since (RFC 9110 section 13.1.3). A Last-Modified that is
// not an HTTP-date is not sent, as the server would have to ignore it.
func (v Validators) set(h http.Header) {
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		if _, err := http.ParseTime(v.LastModified); err == nil {
			h.Set("If-Modified-Since", v.LastModified)
		}
	}
}

// dropValidators removes the conditional headers from a redirected request.
func dropValidators(h http.Header) {
	h.Del("If-None-Match")
	h.Del("If-Modified-Since")
}

// Empty reports whether there is nothing to make a request conditional on.
func (v Validators) Empty() bool {
	if v.ETag != "" {
		return false
	}
	_, err := http.ParseTime(v.LastModified)
	return err != nil
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
