package crawl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Recrawl with change detection (crawl --recrawl). The pages of the earlier
// crawls are queued again, in order of how likely they changed, on the same
// frontier (politeness, robots.txt and budgets as for any URL). A leased URL
// whose page record exists is a revisit: it is requested with the stored
// validators (fetch.FetchIf) and classed against the stored version
// (dedup.Detector.CompareVersions on the two versions' token streams, settled
// on the stored text), and its record is updated in place (storage.Revisit).
// Links of a new version are followed like any page's; what they reach for the
// first time is a new page. The duplicate relations between pages are not
// decided again: a page keeps its class.

// recrawlRound is the latest recrawl of the data dir.
type recrawlRound struct {
	round   int // 0: none yet
	started time.Time
}

// loadRecrawl reads the latest recrawl's round from the store's metadata.
func loadRecrawl(ctx context.Context, st Store) recrawlRound {
	var rc recrawlRound
	if b, err := st.GetMeta(ctx, storage.MetaRecrawlRound); err == nil {
		rc.round, _ = strconv.Atoi(string(b))
	}
	if b, err := st.GetMeta(ctx, storage.MetaRecrawlStarted); err == nil {
		rc.started, _ = time.Parse(time.RFC3339Nano, string(b))
	}
	return rc
}

// Recrawl starts a recrawl round and queues the pages of the earlier crawls
// to revisit, most likely changed first. When the last run was itself a
// recrawl that did not finish (its frontier not empty), that round goes on
// with the queue it left (the queue entries are in the store) and nothing is
// queued again. It returns the round and the URLs queued.
func (e *Engine) Recrawl() (round, queued int, err error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	complete, _ := e.st.GetMeta(e.sctx, storage.MetaComplete)
	if e.rc.round > 0 && string(complete) != "true" {
		return e.rc.round, 0, nil
	}
	cands, err := e.revisitCandidates()
	if err != nil {
		return 0, 0, err
	}
	slices.SortFunc(cands, revisitOrder)
	rc := recrawlRound{round: e.rc.round + 1, started: time.Now().UTC()}
	n, err := e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) {
		items := make([]frontier.Item, 0, len(cands))
		for _, c := range cands {
			p := c.page
			it := frontier.Item{ID: p.ID, URL: p.URL, Depth: p.Depth, Via: p.Via, Host: frontier.HostKey(p.URL)}
			if c.sitemap != nil { // read again, for new URLs and lastmods
				it.Sitemap, it.Via = c.sitemap.Level, c.sitemap.Robots
			}
			it.Seq = e.fr.Assign(it.Host)
			if err := tx.PutQueue(it); err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		if err := tx.PutMeta(storage.MetaRecrawlRound, []byte(strconv.Itoa(rc.round))); err != nil {
			return nil, err
		}
		// Not complete until the frontier is empty again: a run that
		// stops before then leaves this round to the next --recrawl.
		if err := tx.PutMeta(storage.MetaComplete, []byte("false")); err != nil {
			return nil, err
		}
		return items, tx.PutMeta(storage.MetaRecrawlStarted, []byte(rc.started.Format(time.RFC3339Nano)))
	})
	if err != nil {
		return 0, 0, fmt.Errorf("queue the recrawl: %w", err)
	}
	e.rc = rc
	return rc.round, n, nil
}

// revisitCand is a page to revisit and what orders it.
type revisitCand struct {
	page    *storage.Page
	lastmod time.Time      // from a sitemap; zero when unknown
	sitemap *sitemapRecord // the page is a sitemap: read again, first
}

// revisitable reports whether a page record is one a recrawl revisits: a
// stored response with a 2xx status (content or not).
func revisitable(p *storage.Page) bool {
	return p.Status >= 200 && p.Status < 300 && (p.Class.Content() || p.Class == storage.ClassNotHTML)
}

// revisitCandidates reads the pages to revisit, with their sitemap lastmod.
func (e *Engine) revisitCandidates() ([]revisitCand, error) {
	lastmod := map[string]time.Time{}
	err := e.st.ForEachEvidence(e.sctx, "sitemap_url", func(u string, v []byte) error {
		var h struct {
			LastMod time.Time `json:"lastmod"`
		}
		if json.Unmarshal(v, &h) == nil && !h.LastMod.IsZero() {
			lastmod[u] = h.LastMod
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sitemap hints: %w", err)
	}
	sitemaps := map[string]*sitemapRecord{}
	err = e.st.ForEachEvidence(e.sctx, "sitemap", func(u string, v []byte) error {
		var r sitemapRecord
		if json.Unmarshal(v, &r) == nil && r.Level > 0 {
			sitemaps[u] = &r
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sitemaps: %w", err)
	}
	var cands []revisitCand
	err = e.st.ForEachPage(e.sctx, func(p *storage.Page) error {
		if revisitable(p) {
			cands = append(cands, revisitCand{page: p, lastmod: lastmod[p.URL], sitemap: sitemaps[p.URL]})
		}
		return nil
	})
	return cands, err
}

// revisitOrder orders a recrawl by how likely a page changed, after the
// sitemaps (read again first, for the URLs they add): first the
// pages whose sitemap lastmod is later than the stored version, then those
// without a lastmod, last those whose lastmod says they did not change;
// within each, the higher change rate first (real changes over visits,
// Laplace's rule: (changes+1)/(visits+2), 1/2 for a page never revisited),
// then the version fetched longest ago.
func revisitOrder(a, b revisitCand) int {
	tier := func(c revisitCand) int {
		switch {
		case c.lastmod.IsZero():
			return 1
		case c.lastmod.After(c.page.FetchedAt):
			return 0
		}
		return 2
	}
	rate := func(p *storage.Page) float64 {
		var changes, visits int
		if p.Revisit != nil {
			changes, visits = p.Revisit.Changes, p.Revisit.Visits
		}
		return float64(changes+1) / float64(visits+2)
	}
	sitemapFirst := func(c revisitCand) int {
		if c.sitemap != nil {
			return 0
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(sitemapFirst(a), sitemapFirst(b)),
		cmp.Compare(tier(a), tier(b)),
		cmp.Compare(rate(b.page), rate(a.page)),
		a.page.FetchedAt.Compare(b.page.FetchedAt),
		cmp.Compare(a.page.ID, b.page.ID),
	)
}

// revisitOf returns the stored version of a leased URL that a recrawl
// revisits, nil for a URL never fetched.
func (e *Engine) revisitOf(it *frontier.Item) *storage.Page {
	if e.rc.round == 0 || it.Sitemap > 0 { // a sitemap is read again, as a sitemap
		return nil
	}
	p, err := e.st.Page(e.sctx, it.ID)
	if err != nil || p.URL != it.URL || !revisitable(p) {
		return nil
	}
	return p
}

// attemptRevisit takes a revisit up to its release: the address policy and
// robots.txt as for any URL (a refusal is a failed revisit: the stored
// version stays), no mirror skip (the URL has its own stored version), then
// the conditional request. A URL this round already visited (a queue entry
// left twice) is not requested again, unless this is its request at the URL
// a redirect to itself named (FetchURL).
func (e *Engine) attemptRevisit(ctx context.Context, it *frontier.Item, u *url.URL, prev *storage.Page) attempt {
	if prev.Revisit != nil && prev.Revisit.Round == e.rc.round && it.FetchURL == "" {
		e.dropQueueEntry(it)
		return attempt{settled: true}
	}
	refused := func(why string) attempt {
		return attempt{revisit: prev, fetched: true, err: errors.New("not requested: " + why)}
	}
	if e.o.Addresses != nil {
		if err := e.o.Addresses.CheckHost(u.Host); err != nil {
			return refused("refused by the address policy: " + err.Error())
		}
	}
	if e.o.ObeyRobots && e.robots != nil {
		if a, done := e.robotsCheck(ctx, it, u); done {
			if a.record != nil {
				a = refused(a.record.Error)
			}
			a.revisit = prev
			return a
		}
	}
	a := e.request(ctx, it, u, prev)
	a.revisit = prev
	return a
}

// conditionalFetcher fetches with validators (*fetch.Fetcher does).
type conditionalFetcher interface {
	FetchIf(ctx context.Context, rawURL string, v fetch.Validators) (*fetch.Result, error)
}

// fetchVersion requests a URL, conditionally on the stored version when it
// is a revisit and the fetcher can.
func (e *Engine) fetchVersion(ctx context.Context, rawURL string, prev *storage.Page) (*fetch.Result, error) {
	if cf, ok := e.f.(conditionalFetcher); ok && prev != nil {
		return cf.FetchIf(ctx, rawURL, storedValidators(prev))
	}
	return e.f.Fetch(ctx, rawURL)
}

// storedValidators are the validators of a stored version, received with
// it or with the latest revisit that found it unchanged (which stores the
// server's new ones).
func storedValidators(p *storage.Page) fetch.Validators {
	v := fetch.Validators{ETag: p.ETag, LastModified: p.LastModified, Received: p.FetchedAt}
	if p.Revisit != nil && p.Revisit.FetchedAt.After(v.Received) {
		v.Received = p.Revisit.FetchedAt
	}
	return v
}

// versionComparer classes a new version against the previous one
// (*dedup.Detector).
type versionComparer interface {
	CompareVersions(prev, cur *dedup.Signature, prevTokens, curTokens []string) dedup.VersionDecision
}

// revisitResult is a revisit's outcome, made in the worker: the updated
// record, and for a new version what replaces the stored one.
type revisitResult struct {
	rec   *storage.Page
	res   *fetch.Result // set when a new version is stored
	doc   *parse.Document
	sig   *dedup.Signature
	links []string
	// location is the Location header of a page that now redirects: its
	// target is queued as a redirect of the crawl is (Engine.redirect).
	location string
}

// revisit classes a fetched revisit of item it against the stored version.
// A 304 is unchanged only when the request was conditional: a server that
// answers 304 to a request without validators cannot know the version we
// hold, and the visit fails. A 404 or 410 is gone, a redirect moved (its
// target is queued by recordRevisit); both keep the stored version as the
// last one the URL served.
func (e *Engine) revisit(it *frontier.Item, a attempt) *revisitResult {
	prev := a.revisit
	rec := *prev
	rv := storage.Revisit{Round: e.rc.round, FetchedAt: time.Now().UTC()}
	if prev.Revisit != nil {
		rv.Visits, rv.Changes = prev.Revisit.Visits, prev.Revisit.Changes
	}
	out := &revisitResult{rec: &rec}
	res := a.res
	if res != nil {
		rv.Status, rv.FetchedAt = res.Status, res.FetchedAt.UTC()
		rv.Conditional = res.RequestHeader.Get("If-None-Match") != "" || res.RequestHeader.Get("If-Modified-Since") != ""
	}
	switch {
	case a.err != nil || res == nil:
		rv.Change = storage.ChangeFailed
		if a.err != nil {
			rv.Error = a.err.Error()
		}
	case res.Status == http.StatusNotModified && !rv.Conditional:
		rv.Change, rv.Error = storage.ChangeFailed, "HTTP 304 Not Modified to a request without validators"
	case res.Status == http.StatusNotModified:
		rv.Change, rv.Similarity = dedup.ChangeNone.String(), 1
		rv.Profile, rv.Request, rv.Response = storage.ProfileNotModified, res.WireRequest(), wireHeader(res)
	case res.Status == http.StatusNotFound || res.Status == http.StatusGone:
		rv.Change = storage.ChangeGone
		keepVisit(&rv, res)
	case res.Status >= 300 && res.Status < 400:
		loc := res.Header.Get("Location")
		cu, _, ok := e.redirectTarget(it, loc)
		switch {
		case !ok:
			rv.Change, rv.Error = storage.ChangeFailed, fmt.Sprintf("HTTP %d without a usable Location", res.Status)
		case cu == it.URL:
			// To itself but for session parameters: asked again at the
			// URL as written (Engine.redirectToSelf), whose visit
			// classes the page.
			rv.Change, rv.Error = storage.ChangeFailed, fmt.Sprintf("HTTP %d to itself but for session parameters (%s)", res.Status, loc)
			out.location = loc
		default:
			rv.Change, rv.Location = storage.ChangeMoved, cu
			out.location = loc
			keepVisit(&rv, res)
		}
	case res.Status < 200 || res.Status >= 300:
		rv.Change, rv.Error = storage.ChangeFailed, fmt.Sprintf("HTTP %d", res.Status)
	default:
		e.newVersion(a, out, &rv)
	}
	if rv.Profile != "" {
		// Unchanged: the stored version stays, under the validators the
		// server gives it now (a file touched keeps its bytes and gets a
		// new ETag), so that the next recrawl is answered 304.
		if v := res.Header.Get("ETag"); v != "" {
			rec.ETag = v
		}
		if v := res.Header.Get("Last-Modified"); v != "" {
			rec.LastModified = v
		}
	}
	if rv.Change != storage.ChangeFailed {
		rv.Visits++
	}
	if rv.Change == dedup.ChangeReal.String() || rv.Change == storage.ChangeMoved {
		rv.Changes++
	}
	rec.Revisit = &rv
	return out
}

// newVersion classes a 2xx revisit: the same payload is unchanged (and
// stored once); another payload replaces the stored version, classed by
// CompareVersions on the two versions' visible text (and title, with
// title_tokens), the tokens the stored text can give back.
func (e *Engine) newVersion(a attempt, out *revisitResult, rv *storage.Revisit) {
	prev, res, rec := a.revisit, a.res, out.rec
	sha256, sha1 := res.PayloadDigests()
	if sha1 == prev.SHA1 && sha256 == prev.SHA256 {
		rv.Change, rv.Similarity = dedup.ChangeNone.String(), 1
		rv.Profile, rv.Request, rv.Response = storage.ProfileIdenticalBody, res.WireRequest(), wireHeader(res)
		return
	}
	rv.PrevSHA1, rv.PrevFetchedAt = prev.SHA1, prev.FetchedAt
	fillFromResult(rec, res)
	out.res = res
	rv.Change = dedup.ChangeReal.String()
	if !res.IsHTML || !prev.Class.Content() {
		return
	}
	base, err := url.Parse(res.FinalURL)
	if err != nil {
		base = a.base
	}
	doc, err := parse.Parse(res.Body, base, e.o.Parse)
	if err != nil {
		rv.Error = "parse: " + err.Error()
		return
	}
	e.describe(rec, doc, res)
	out.doc, out.links = doc, e.followable(doc)
	out.sig = e.det.Sign(doc.Tokens)
	rec.Simhash = out.sig.Simhash
	cur := e.storedTokens(nil, doc.Title, doc.Text)
	var before []string
	if text, err := e.st.Text(e.sctx, prev.ID); err == nil {
		before = e.storedTokens(nil, prev.Title, text)
	} else {
		rv.Error = "previous text unreadable: " + err.Error()
		return
	}
	vc, ok := e.det.(versionComparer)
	if !ok {
		return
	}
	d := vc.CompareVersions(e.det.Sign(before), e.det.Sign(cur), before, cur)
	rv.Change, rv.Similarity, rv.Settled = d.Change.String(), d.Similarity, d.Settled
}

// maxVisitPayload bounds the payload of a gone or moved visit's response
// kept in the page record (a 404 page or a redirect's note is small).
const maxVisitPayload = 64 << 10

// keepVisit keeps a gone or moved visit's exchange in its revisit, for the
// WARC: the whole response, or its header alone when the payload is larger
// than maxVisitPayload.
func keepVisit(rv *storage.Revisit, res *fetch.Result) {
	rv.Request, rv.Response = res.WireRequest(), res.WireResponse()
	if len(res.RawBody) > maxVisitPayload {
		rv.Response, rv.Truncated = wireHeader(res), true
	}
}

// wireHeader is the response's status line and header, without payload:
// the block of a revisit record.
func wireHeader(res *fetch.Result) []byte {
	w := res.WireResponse()
	if i := bytes.Index(w, []byte("\r\n\r\n")); i >= 0 {
		return w[:i+4]
	}
	return w
}

// commitRevisit records a revisit in one transaction: the updated record,
// a new version's raw exchange, text and signature, the links it adds, and
// the deletion of the queue entry. An attempt that made no request and
// refused nothing (robots.txt unavailable, the host given up) records
// nothing: the queue entry stays for a later run, as any URL's.
func (e *Engine) commitRevisit(it *frontier.Item, a attempt) {
	if !a.fetched {
		return
	}
	if a.release.Requested {
		e.pages.Add(1)
	}
	r := e.revisit(it, a)
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		return
	}
	var pushed []frontier.Item
	err := e.st.Update(e.sctx, func(tx Tx) error {
		items, err := e.recordRevisit(tx, it, r)
		if err != nil {
			return err
		}
		pushed = items
		if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
			return err
		}
		return e.putCounts(tx, a.release.Requested)
	})
	if err != nil {
		e.setFatal(fmt.Errorf("cannot record the revisit of %s: %w", it.URL, err))
		return
	}
	if a.release.Requested {
		e.spent.Add(1)
	}
	if r.sig != nil && r.sig.Words > 0 && r.rec.Class == storage.ClassUnique {
		// New pages are compared with the current version too (the
		// previous one stays indexed under the same id; settlement
		// reads the current text).
		if err := e.indexReady(); err != nil {
			e.setFatal(err)
			return
		}
		if err := e.index.Add(e.sctx, r.rec.ID, r.sig); err != nil {
			e.setFatal(fmt.Errorf("cannot index the new version of %s: %w", it.URL, err))
			return
		}
	}
	e.push(pushed)
}

// dropQueueEntry deletes the queue entry of a URL this round already
// visited.
func (e *Engine) dropQueueEntry(it *frontier.Item) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	err := e.st.Update(e.sctx, func(tx Tx) error { return tx.DeleteQueue(it.Host, it.Seq) })
	if err != nil {
		e.setFatal(fmt.Errorf("cannot drop the queue entry of %s: %w", it.URL, err))
	}
}

// giveUpRevisit records a revisit of a host the frontier gave up as a
// failed revisit, keeping the stored version; false when it is no revisit.
func (e *Engine) giveUpRevisit(it *frontier.Item, reason string) bool {
	prev := e.revisitOf(it)
	if prev == nil {
		return false
	}
	e.commitRevisit(it, attempt{revisit: prev, fetched: true, err: errors.New("host given up: " + reason)})
	return true
}

// recordRevisit writes a revisit's record and new version, and queues the
// new version's links, or the target of a page that now redirects (under the
// rules of any redirect: scope, depth, fetch.max_redirects, the seen-set; a
// target already known is not queued again, a page of the earlier crawl being
// revisited on its own).
func (e *Engine) recordRevisit(tx Tx, it *frontier.Item, r *revisitResult) ([]frontier.Item, error) {
	p := r.rec
	var items []frontier.Item
	if r.location != "" {
		hop := storage.Page{Status: p.Revisit.Status} // redirect marks a chain too long on it
		item, ok, err := e.redirect(tx, it, &hop, r.location)
		if err != nil {
			return nil, err
		}
		if ok {
			items = append(items, item)
		}
		if hop.Error != "" {
			p.Revisit.Error = hop.Error
		}
	}
	if r.res != nil {
		p.HasRaw = false
		if e.o.KeepRaw && len(r.res.RawBody) > 0 {
			p.HasRaw = true
			if err := tx.PutRaw(p.ID, r.res.WireRequest(), r.res.WireResponse()); err != nil {
				return nil, err
			}
		}
	}
	if r.doc != nil {
		if err := tx.PutText(p.ID, r.doc.Text); err != nil {
			return nil, err
		}
		if p.Class == storage.ClassUnique && r.sig.Words > 0 {
			b, err := r.sig.MarshalBinary()
			if err != nil {
				return nil, err
			}
			if err := tx.PutSignature(p.ID, b); err != nil {
				return nil, err
			}
		}
		for _, cu := range r.links {
			it, ok, err := e.follow(tx, cu, p.Depth+1, p.URL)
			if err != nil {
				return nil, err
			}
			if ok {
				items = append(items, it)
			}
		}
	}
	return items, e.putPage(tx, p)
}
