package crawl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The worker: a lease becomes an attempt (what happened up to the release of
// the host's politeness slot), and a fetched attempt a page (parsed and
// signed after the release, so the host's clock does not wait on it). handle
// releases once and commits once.

// attempt is what a lease came to before its release.
type attempt struct {
	release frontier.Outcome
	settled bool // recorded at lease time (a mirror copy): release, push pushed, done
	pushed  []frontier.Item
	record  *storage.Page // a record made without a page request (bad URL, refused host, disallowed)
	fetched bool          // a page request was made: res and err hold its result
	base    *url.URL
	res     *fetch.Result
	err     error
	revisit *storage.Page // the stored version a recrawl revisits (recrawl.go)
}

// handle processes one leased item to the end of its lease.
func (e *Engine) handle(ctx context.Context, it *frontier.Item) {
	defer e.fr.Finish(it)
	if it.Sitemap > 0 {
		defer e.sitemaps.hold()() // its body, from the fetch to the commit
	}
	a := e.attempt(ctx, it)
	requeued := e.fr.Release(it, a.release)
	if a.settled {
		e.push(a.pushed)
		return
	}
	if requeued {
		return // back in the queue: robots.txt first, back-off, cancelled
	}
	defer e.recordGiveUps()
	switch {
	case a.revisit != nil:
		e.commitRevisit(it, a)
	case a.fetched && it.Sitemap > 0:
		e.pages.Add(1)
		e.handleSitemap(it, a.res, a.err)
	case a.fetched:
		e.pages.Add(1)
		p, c := e.page(a)
		e.commit(it, p, c, a.res, true)
	case a.record != nil:
		e.commit(it, a.record, nil, nil, false)
	}
}

// attempt takes a leased item up to its release: the mirror skip, the
// address policy, robots.txt, the request.
func (e *Engine) attempt(ctx context.Context, it *frontier.Item) attempt {
	if g := it.GivenUp; g != nil {
		if prev := e.revisitOf(it); prev != nil {
			return attempt{revisit: prev, fetched: true, err: errors.New("host given up: " + g.Reason)}
		}
		return attempt{record: giveUpRecord(*g)}
	}
	u, err := url.Parse(it.Target())
	if err != nil {
		return attempt{record: &storage.Page{Class: storage.ClassError, Error: err.Error(), ErrorClass: "url"}}
	}
	if prev := e.revisitOf(it); prev != nil {
		return e.attemptRevisit(ctx, it, u, prev)
	}
	// A URL under a subtree its host lacks, verification pick or not.
	if a, ok := e.mirror.skipMissing(it); ok {
		return a
	}
	if !it.Verify {
		if a, ok := e.mirror.skipLeased(it); ok {
			return a
		}
	}
	if e.o.Addresses != nil {
		if err := e.o.Addresses.CheckHost(u.Host); err != nil {
			// A redirect or link to 169.254.169.254, 10.0.0.1 or
			// metadata.google.internal: no robots.txt request, no
			// page request.
			return attempt{record: &storage.Page{Class: storage.ClassError, ErrorClass: fetch.ClassPrivate,
				Error: "not requested: refused by the address policy: " + err.Error()}}
		}
	}
	if e.o.ObeyRobots && e.robots != nil {
		if a, done := e.robotsCheck(ctx, it, u); done {
			return a
		}
	}
	return e.request(ctx, it, u, nil)
}

// robotsCheck applies robots.txt to a lease; done reports that the attempt
// ends here.
func (e *Engine) robotsCheck(ctx context.Context, it *frontier.Item, u *url.URL) (a attempt, done bool) {
	beforeRobots(it.Target())
	rctx := ctx
	if !leaseCheckOff("robots") {
		rctx = e.newLeaseFence(it).fenced(ctx) // asked only when robots.txt is requested
	}
	rules, fetched, err := e.robots.Get(rctx, u)
	if err != nil { // cancelled, or not requested: the lease is not proven to last
		if isFenced(err) {
			e.leaseLost(ctx, it, "robots.txt", err)
		}
		return attempt{release: frontier.Outcome{Requeue: true}}, true
	}
	if fetched {
		e.requests.Add(1)
	}
	if d, ok := rules.CrawlDelay(e.o.RobotsAgent); ok {
		if e.fr.SetCrawlDelay(it.Host, d) {
			e.logCap(it.Host, d, rules.CrawlDelayText(e.o.RobotsAgent))
		}
	}
	e.discoverSitemaps(it, u, rules)
	switch {
	case rules.Unavailable():
		// RFC 9309 2.3.1.3: a 5xx or unreachable robots.txt means the
		// whole host is disallowed until it recovers. Keep the URL and
		// come back after the retry interval; a host that never recovers
		// is given up by the frontier (max_failures), one that cannot
		// recover soon at once (robotsOutcome).
		return attempt{release: robotsOutcome(rules, fetched, e.o.RobotsRetry)}, true
	case fetched:
		// robots.txt was a request to this host: wait for the politeness
		// clock before the page itself.
		return attempt{release: frontier.Outcome{Requested: true, Requeue: true}}, true
	case !rules.Allowed(e.o.RobotsAgent, fetch.RequestURI(u)):
		return attempt{record: &storage.Page{Class: storage.ClassRobotsDisallowed, Error: "disallowed by robots.txt"}}, true
	}
	return attempt{}, false
}

// request fetches the leased URL, once its lease is proven to hold (and
// again once its connection is obtained, if that took long: fence.go).
func (e *Engine) request(ctx context.Context, it *frontier.Item, u *url.URL, prev *storage.Page) attempt {
	fence := e.newLeaseFence(it)
	if !e.leaseHolds(ctx, it, fence) {
		return attempt{release: frontier.Outcome{Requeue: true}}
	}
	fctx := ctx
	if !leaseCheckOff("recheck") {
		fctx = fence.fenced(ctx)
	}
	start := time.Now()
	var res *fetch.Result
	var ferr error
	if it.Sitemap > 0 {
		res, ferr = e.fetchSitemap(stallInConnect(fctx, it.Target()), it.Target())
	} else {
		res, ferr = e.fetchVersion(stallInConnect(fctx, it.Target()), it.Target(), prev)
	}
	if isFenced(ferr) {
		e.leaseLost(ctx, it, "", ferr)
		return attempt{release: frontier.Outcome{Requeue: true}}
	}
	e.requests.Add(1)
	a := attempt{fetched: true, base: u, res: res, err: ferr,
		release: frontier.Outcome{Requested: true, ResponseTime: time.Since(start)}}
	if res != nil {
		a.release.Status, a.release.RetryAfter, a.release.ResponseTime = res.Status, res.RetryAfter, res.Duration
	}
	var fe *fetch.Error
	if ferr != nil && errors.As(ferr, &fe) {
		switch fe.Class {
		case "dns", "connect", "timeout", "reset":
			a.release.Failed = true
		case "canceled":
			return attempt{release: frontier.Outcome{Requeue: true}}
		}
	}
	if ferr != nil && errors.Is(ferr, context.Canceled) {
		return attempt{release: frontier.Outcome{Requeue: true}}
	}
	return a
}

// leaseHolds is the fence right before a page request of a shared crawl
// (LeaseChecker): false when the item's lease is not proven to last until
// the request is sent (this worker stalled since its pop, and the lease may
// have moved to a worker that sends the URL too). The request is not sent:
// its release puts the item back under that lease if it still holds, else
// the partition's holder has requeued it.
func (e *Engine) leaseHolds(ctx context.Context, it *frontier.Item, fence *leaseFence) bool {
	beforeLeaseCheck(it.Target())
	if fence == nil || leaseCheckOff("page") {
		return true
	}
	err := fence.check(ctx)
	if err != nil {
		e.leaseLost(ctx, it, "", err)
	}
	return err == nil
}

// page makes the record of a fetched attempt, and for an HTML page its
// content: parsed, its links canonicalized, signed (or known as a
// byte-identical copy of a page of this run).
func (e *Engine) page(a attempt) (*storage.Page, *pageContent) {
	p := &storage.Page{}
	res := a.res
	if res != nil {
		fillFromResult(p, res)
	}
	var fe *fetch.Error
	switch {
	case a.err != nil:
		p.Class, p.Error, p.ErrorClass = storage.ClassError, a.err.Error(), "other"
		if errors.As(a.err, &fe) {
			p.ErrorClass = fe.Class
		}
		return p, nil
	case res.Status >= 300 && res.Status < 400, res.Status >= 200 && res.Status < 400 && !res.IsHTML:
		p.Class = storage.ClassNotHTML
		return p, nil
	case res.Status >= 400 || res.Status < 200:
		p.Class, p.ErrorClass, p.Error = storage.ClassError, "http", fmt.Sprintf("HTTP %d", res.Status)
		return p, nil
	}
	base, _ := url.Parse(res.FinalURL)
	if base == nil {
		base = a.base
	}
	doc, err := parse.Parse(res.Body, base, e.o.Parse)
	if err != nil {
		p.Class, p.ErrorClass, p.Error = storage.ClassError, "parse", err.Error()
		return p, nil
	}
	e.describe(p, doc, res)
	return p, e.content(p, doc)
}

// describe copies what the parser found into the page record.
func (e *Engine) describe(p *storage.Page, doc *parse.Document, res *fetch.Result) {
	p.Title, p.Lang, p.Canonical = doc.Title, doc.Lang, doc.Canonical
	if p.Canonical == "" {
		base, _ := url.Parse(res.FinalURL)
		p.Canonical = parse.HeaderCanonical(res.Header.Values("Link"), base)
	}
	if code, conf, ok := parse.DetectLanguage(doc.Text); ok {
		p.TextLang, p.TextLangConf = code, conf
	}
	p.NoIndex, p.NoFollow = doc.NoIndex, doc.NoFollow
	for _, v := range res.Header.Values("X-Robots-Tag") {
		ni, nf := parse.RobotsDirectives(v, e.o.RobotsAgent)
		p.NoIndex = p.NoIndex || ni
		p.NoFollow = p.NoFollow || nf
	}
	p.Words = len(doc.Tokens)
	p.Links = len(doc.Links)
}

// content signs a parsed page. A payload byte-identical to a page already
// seen has the same token stream: it is an exact duplicate without signing
// it again.
func (e *Engine) content(p *storage.Page, doc *parse.Document) *pageContent {
	c := &pageContent{doc: doc, links: e.followable(doc)}
	digest := payloadKey(p.SHA256)
	if hit, ok := e.digests.get(digest); ok && len(doc.Tokens) > 0 && !e.o.Parse.URLTokens {
		c.known = &dedup.Decision{Class: dedup.Exact, Original: hit.original, Similarity: 1, Method: "exact"}
		p.Simhash = hit.simhash
	} else {
		c.sig = e.det.Sign(doc.Tokens)
		p.Simhash = c.sig.Simhash
		c.digest = &digest
	}
	return c
}

type pageContent struct {
	doc    *parse.Document
	links  []string         // canonical followable links
	sig    *dedup.Signature // nil when known is set
	known  *dedup.Decision  // decided without signing (byte-identical payload)
	digest *[8]byte         // payload key to remember after the commit
}

// followable returns the canonical URLs of the links a page offers to follow
// (rel=nofollow dropped unless configured), in order, without repeats. It
// runs in the worker, outside the serial commit.
func (e *Engine) followable(doc *parse.Document) []string {
	links := doc.Links
	if doc.Refresh != "" {
		links = append(links[:len(links):len(links)], parse.Link{URL: doc.Refresh, Tag: "meta"})
	}
	out := make([]string, 0, len(links))
	seen := make(map[string]bool, len(links))
	for _, l := range links {
		if l.Nofollow && !e.o.FollowNofollow {
			continue
		}
		cu, err := frontier.Canonicalize(l.URL, nil)
		cu = e.params.Canonical(cu)
		if err != nil || seen[cu] {
			continue
		}
		seen[cu] = true
		out = append(out, cu)
	}
	return out
}

func fillFromResult(p *storage.Page, r *fetch.Result) {
	p.Status = r.Status
	p.ContentType = r.ContentType
	p.FetchedAt = r.FetchedAt
	p.DurationMS = float64(r.Duration.Microseconds()) / 1000
	p.RemoteIP = r.RemoteIP
	p.Bytes = len(r.RawBody)
	if r.FinalURL != "" && r.FinalURL != r.URL {
		p.FinalURL = r.FinalURL
		p.Redirects = r.Redirects
	}
	p.SHA256, p.SHA1 = r.PayloadDigests()
	p.ETag, p.LastModified = r.Header.Get("ETag"), r.Header.Get("Last-Modified")
}

// payloadDigests remembers, per payload, the page it is (or is a copy of):
// a cache of this run, not shared state (a miss signs the page, which the
// DuplicateIndex then finds).
type payloadDigests struct {
	mu sync.RWMutex
	m  map[[8]byte]digestHit
}

type digestHit struct{ original, simhash uint64 }

// payloadKey is the first 8 bytes of the payload's SHA-256, taken from the
// hex digest the page record already carries (the body is hashed once).
func payloadKey(sha256Hex string) [8]byte {
	var k [8]byte
	hex.Decode(k[:], []byte(sha256Hex[:16]))
	return k
}

func (d *payloadDigests) get(k [8]byte) (digestHit, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	h, ok := d.m[k]
	return h, ok
}

func (d *payloadDigests) put(k [8]byte, h digestHit) {
	d.mu.Lock()
	d.m[k] = h
	d.mu.Unlock()
}
