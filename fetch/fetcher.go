package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"time"

	"github.com/gocolly/colly/v2"
)

// Log keys used by this package.
const (
	LogKeyURL      = "url"
	LogKeyStatus   = "status"
	LogKeyBytes    = "bytes"
	LogKeyDuration = "duration"
	LogKeyClass    = "class"
	LogKeyErr      = "err"
	LogKeyHost     = "host"
)

// acceptHeader is what a browser-like crawler asks for; the crawler parses HTML and XHTML.
const acceptHeader = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// Result is one fetched response. Non-2xx statuses are results, not errors.
type Result struct {
	URL           string        // requested URL
	FinalURL      string        // URL after redirects (== URL when none)
	Redirects     []string      // URLs that answered with a redirect, in order, starting with URL (excluding FinalURL)
	Status        int           //
	Proto         string        // e.g. "HTTP/1.1"
	Header        http.Header   // response headers (Content-Encoding/Content-Length removed when fetch decoded the body)
	RequestHeader http.Header   // request headers as sent, including Host (for WARC request records)
	RawBody       []byte        // body after Content-Encoding decoding, before charset conversion
	Body          []byte        // HTML converted to UTF-8; otherwise the same slice as RawBody
	Charset       string        // encoding Body was converted from ("" when not HTML)
	ContentType   string        // media type, lower-case, no parameters ("" if the header is absent)
	IsHTML        bool          // text/html or application/xhtml+xml (sniffed when the header is absent)
	Truncated     bool          // the body was longer than MaxBodySize; RawBody holds the first MaxBodySize bytes
	Partial       bool          // FetchSitemap only: the body ended early with the error returned; RawBody holds what arrived
	RemoteIP      string        // server IP actually connected to, "" if unknown or through a proxy
	Proxy         string        // the proxy the response came through (credentials removed), "" if direct
	FetchedAt     time.Time     // when the request started
	Duration      time.Duration // time to full body
	RetryAfter    time.Duration // from Retry-After (delta-seconds or HTTP-date), 0 if absent/invalid
}

// Fetcher fetches URLs through a colly collector. It is safe for concurrent use by many workers.
type Fetcher struct {
	opts      Options
	log       *slog.Logger
	base      *colly.Collector
	transport http.RoundTripper // the transport under our recording wrapper
}

// New builds a Fetcher. Zero option fields take their defaults; a nil logger discards.
func New(o Options, logger *slog.Logger) (*Fetcher, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	inner := o.Transport
	if inner == nil {
		inner = NewTransport(o)
	} else if o.DenyPrivate {
		logger.Warn("fetch: DenyPrivate with an injected transport is checked after connecting, not at dial time")
	}

	c := colly.NewCollector()
	// NewCollector applies COLLY_* environment variables; set every field that matters explicitly.
	c.UserAgent = o.UserAgent
	c.Headers = nil
	c.AllowURLRevisit = true
	c.IgnoreRobotsTxt = true // robots.txt is handled by RobotsCache
	c.ParseHTTPErrorResponse = true
	c.Async = false
	c.MaxDepth = 0
	c.MaxRequests = 0
	c.AllowedDomains = nil
	c.DisallowedDomains = nil
	c.URLFilters = nil
	c.DisallowedURLFilters = nil
	c.CacheDir = ""
	c.DetectCharset = false // charset handled by ToUTF8, which keeps the raw bytes
	c.CheckHead = false
	c.TraceHTTP = false
	c.MaxBodySize = int(o.MaxBodySize + 1) // one more byte than allowed tells us the body was larger
	// No cookie jar: fetches are independent and the jar would grow without bound across hosts.
	c.SetClient(&http.Client{Transport: &recordingTransport{inner: inner, traced: tracesConn(inner)}, Timeout: o.Timeout})
	c.SetRedirectHandler(checkRedirect)

	return &Fetcher{opts: o, log: logger, base: c, transport: inner}, nil
}

// Options returns the effective options (defaults filled in).
func (f *Fetcher) Options() Options { return f.opts }

// Close releases idle connections.
func (f *Fetcher) Close() {
	if ci, ok := f.transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Fetch GETs rawURL, following up to MaxRedirects redirects, within Timeout and ctx. Transport
// failures return an *Error. A body over MaxBodySize returns the truncated *Result together with an
// *Error of class "too_large" (errors.Is(err, ErrTooLarge)).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	res, _, err := f.do(ctx, rawURL, f.pageLimits(), Validators{})
	return res, err
}

// FetchSitemap is Fetch for a sitemap, which the sitemaps protocol lets be larger than a page:
// its body is bounded by maxBody decoded bytes (a gzip bomb sent with Content-Encoding stops there)
// in place of MaxBodySize, and a 2xx body that ends early (the timeout, a reset, a connection
// closed mid-body) after some bytes arrived is returned together with the error, RawBody holding
// what arrived and Partial set. Page fetches (Fetch, FetchIf) are not affected.
func (f *Fetcher) FetchSitemap(ctx context.Context, rawURL string, maxBody int64) (*Result, error) {
	if maxBody <= 0 || maxBody > maxBodyLimit {
		return nil, &Error{URL: rawURL, Class: "other", Err: fmt.Errorf("sitemap body limit %d: must be in [1, %d]", maxBody, int64(maxBodyLimit))}
	}
	lim := f.pageLimits()
	lim.maxBody, lim.partial = maxBody, true
	res, _, err := f.do(ctx, rawURL, lim, Validators{})
	return res, err
}

// limits are the per-call limits of do.
type limits struct {
	maxRedirects int
	maxBody      int64
	noFollow     bool // return the first response, redirect or not
	// revisit follows a redirect back to a URL of the chain, within maxRedirects: RFC 9309
	// section 2.3.1.2 asks robots.txt to follow at least five redirects, a loop included.
	revisit bool
	// partial returns a 2xx body that ended early with its error (FetchSitemap).
	partial bool
}

// pageLimits are the limits of a page fetch.
func (f *Fetcher) pageLimits() limits {
	return limits{maxRedirects: f.opts.MaxRedirects, maxBody: f.opts.MaxBodySize, noFollow: f.opts.NoFollowRedirects}
}

// do performs one fetch with per-call limits. lastStatus is the status of the last response seen,
// also when the redirect policy stopped the chain.
func (f *Fetcher) do(parent context.Context, rawURL string, lim limits, cond Validators) (res *Result, lastStatus int, err error) {
	maxBody := lim.maxBody
	log := f.log.With(LogKeyURL, rawURL)
	fail := func(cause error) (*Result, int, error) {
		e := &Error{URL: rawURL, Class: classify(parent, cause), Err: cause}
		log.Debug("fetch failed", LogKeyClass, e.Class, LogKeyErr, cause)
		return nil, lastStatus, e
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fail(fmt.Errorf("parse url: %w", err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fail(fmt.Errorf("%q: %w", u.Scheme, ErrScheme))
	}
	if u.Host == "" {
		return fail(fmt.Errorf("parse url: missing host"))
	}
	if err := parent.Err(); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(parent, f.opts.Timeout)
	defer cancel()
	st := &reqState{maxRedirects: lim.maxRedirects, noFollow: lim.noFollow, revisit: lim.revisit, partial: lim.partial}
	if lim.partial {
		st.partialMax = maxBody + 1 // one more byte than allowed tells us the body was larger
	}
	if f.opts.DenyPrivate && f.opts.Transport != nil {
		st.policy = &f.opts.Policy
	}
	ctx = context.WithValue(ctx, stateKey{}, st)
	ctx = httptrace.WithClientTrace(ctx, st.trace())
	if fence := fenceOf(parent); fence != nil {
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		st.fence, st.stop = fence, stop
		ctx = httptrace.WithClientTrace(ctx, st.fenceTrace(parent, fence, stop))
	}

	// A clone shares the HTTP backend but has its own stdlib context and callbacks, so concurrent
	// calls never see each other's responses.
	c := f.base.Clone()
	c.Context = ctx
	c.MaxBodySize = int(maxBody + 1)
	var resp *colly.Response
	c.OnResponse(func(r *colly.Response) { resp = r })

	hdr := http.Header{}
	hdr.Set("User-Agent", f.opts.UserAgent)
	hdr.Set("Accept", acceptHeader)
	hdr.Set("Accept-Encoding", "gzip, deflate")
	cond.set(hdr)

	start := time.Now()
	reqErr := c.Request(http.MethodGet, rawURL, nil, nil, hdr)
	dur := time.Since(start)

	st.mu.Lock()
	lastStatus = st.lastStatus
	redirects := st.redirects
	reqHeader := st.reqHeader
	proto := st.proto
	remoteIP := st.remoteIP
	proxy := st.proxy
	capture := st.body
	fenced := st.fenced
	partialHeader, partialURL := st.partialHeader, st.partialURL
	st.mu.Unlock()

	if fenced != nil {
		return fail(fmt.Errorf("%w: %w", ErrFenced, fenced))
	}
	var partialErr error
	if reqErr != nil && lim.partial && partialHeader != nil && capture != nil && capture.buf.Len() > 0 &&
		lastStatus >= 200 && lastStatus < 300 {
		// The body broke off after some of it arrived: what arrived is the result.
		partialErr = &Error{URL: rawURL, Class: classify(parent, reqErr), Err: reqErr}
		resp = &colly.Response{StatusCode: lastStatus, Headers: &partialHeader, Request: &colly.Request{URL: partialURL}}
		reqErr = nil
	}
	if reqErr != nil {
		return fail(reqErr)
	}
	if resp == nil {
		return fail(errors.New("colly returned no response"))
	}
	raw := resp.Body
	if capture != nil {
		raw = capture.buf.Bytes()
	}
	truncated := int64(len(raw)) > maxBody
	if truncated {
		raw = raw[:maxBody:maxBody]
	}
	header := http.Header{}
	if resp.Headers != nil {
		header = *resp.Headers
	}
	res = &Result{
		URL:           rawURL,
		FinalURL:      rawURL,
		Status:        resp.StatusCode,
		Proto:         proto,
		Header:        header,
		RequestHeader: reqHeader,
		RawBody:       raw,
		Body:          raw,
		ContentType:   mediaType(header.Get("Content-Type")),
		Truncated:     truncated,
		RemoteIP:      remoteIP,
		FetchedAt:     start,
		Duration:      dur,
		RetryAfter:    ParseRetryAfter(header.Get("Retry-After"), time.Now()),
	}
	if proxy != nil {
		res.RemoteIP, res.Proxy = "", proxy.Redacted()
	}
	if len(redirects) > 0 {
		res.Redirects = append([]string{rawURL}, redirects[1:]...)
		res.FinalURL = resp.Request.URL.String()
	}
	if res.ContentType != "" {
		res.IsHTML = isHTMLType(res.ContentType)
	} else {
		res.IsHTML = sniffHTML(raw)
	}
	if res.IsHTML {
		res.Body, res.Charset = ToUTF8(raw, header.Get("Content-Type"))
	}
	log.Debug("fetched", LogKeyStatus, res.Status, LogKeyBytes, len(raw), LogKeyDuration, dur)
	if truncated {
		return res, lastStatus, &Error{URL: rawURL, Class: ClassTooLarge, Err: fmt.Errorf("more than %d bytes: %w", maxBody, ErrTooLarge)}
	}
	if partialErr != nil {
		res.Partial = true
		log.Debug("body ended early", LogKeyBytes, len(raw), LogKeyErr, partialErr)
		return res, lastStatus, partialErr
	}
	return res, lastStatus, nil
}
