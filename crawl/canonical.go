package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Canonical hints (Options.CanonicalHints, crawl.canonical_hints): a link
// about to be queued whose alias key (AliasKey) is known to belong to
// another URL (a fetched page's rel=canonical, HTML or HTTP Link header, or
// a sitemap listing another form of the key) is not fetched: the canonical
// URL is queued in its place (if not seen) and the link recorded
// mirror_skipped with method "canonical", waiting on it (queued if the
// canonical URL fails, as a mirror copy is).
//
// A hint is never proof, since sites misuse canonical (every page canonical
// to the home page). A page that names another URL canonical is checked
// against it by the crawl's own duplicate decision once both are fetched;
// when they are not duplicates, or when more than maxPendingClaims pages name
// one URL not fetched yet, the canonical URL's host is distrusted: its hints
// are used no more and the aliases held back on them are queued. Records
// (evidence, read through EvidenceReader): "alias" by alias key, the URL the
// key stands for; "alias_claim" by canonical URL, the pages naming it not
// checked yet; "alias_host" by host, its trust and the aliases held.

const (
	// maxPendingClaims: more pages than this naming one URL, before it
	// is fetched, distrust its host.
	maxPendingClaims = 8
	// maxHeldPerHost bounds the aliases held back per host (each is
	// listed, to be queued if the host's hints are withdrawn), in
	// records of heldChunk.
	maxHeldPerHost = 100000
	heldChunk      = 100
)

// aliasMethod is the method of an alias's skip record.
const aliasMethod = "canonical"

// aliasIndexes are the file names that stand for their directory.
var aliasIndexes = []string{"index.html", "index.htm", "index.php", "default.aspx", "default.asp", "default.htm"}

// AliasKey is the key under which the forms of one URL that servers
// commonly serve alike meet: the scheme is dropped (http and https), the
// host lowercased without a leading "www." and without the scheme's default
// port, a trailing index file (index.html, index.htm, index.php,
// default.aspx, default.asp, default.htm) dropped for its directory, the
// trailing slash dropped; the query is kept as written (after
// frontier.Canonicalize), the fragment dropped. Two URLs with one key are
// likely, never certainly, one page: the key only finds hints.
func AliasKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	host := strings.ToLower(u.Hostname())
	host = strings.TrimPrefix(host, "www.")
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		host += ":" + p
	}
	path := u.EscapedPath()
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		for _, f := range aliasIndexes {
			if strings.EqualFold(path[i+1:], f) {
				path = path[:i+1]
				break
			}
		}
	}
	path = strings.TrimRight(path, "/")
	key := host + path
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return key
}

// aliasHint is what an alias key stands for.
type aliasHint struct {
	Canonical string `json:"canonical"`
	Source    string `json:"source"` // "rel" (a page said so) or "sitemap"
}

// aliasHost is a host's trust in its hints and the aliases held on them.
type aliasHost struct {
	Distrusted bool   `json:"distrusted,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Sampled    bool   `json:"sampled,omitempty"`   // an alias was fetched to check the hints
	Confirmed  int    `json:"checked,omitempty"`   // claims checked and confirmed
	Wrong      int    `json:"wrong,omitempty"`     // claims checked and refuted
	Withdrawn  int    `json:"withdrawn,omitempty"` // aliases queued when distrusted
	Held       int    `json:"held,omitempty"`      // aliases held: "alias_held" records host#0, host#1, ...
}

type heldAlias struct {
	URL   string `json:"url"`
	Depth int    `json:"depth"`
	Via   string `json:"via"`
}

// aliasClaims are the pages (ids) naming a URL canonical, not checked yet.
type aliasClaims struct {
	IDs []uint64 `json:"ids"`
}

// getJSON reads evidence record kind/key into v.
func getJSON(r EvidenceReader, kind, key string, v any) (bool, error) {
	b, ok, err := r.GetEvidence(kind, key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s record %s: %w", kind, key, err)
	}
	return true, nil
}

// aliasLink handles link cu of page via before it is followed: done reports
// that the link is held back on its canonical URL (queued now if new).
func (ct *commitTx) aliasLink(cu string, via *storage.Page) (done bool, err error) {
	r, ok := ct.tx.(EvidenceReader)
	if !ok || !ct.e.o.CanonicalHints {
		return false, nil
	}
	if seen, err := ct.seen(cu); err != nil || seen {
		return false, err
	}
	if standing, err := standingSkip(ct.tx, cu); err != nil || standing {
		return standing, err
	}
	var h aliasHint
	if ok, err := getJSON(r, "alias", AliasKey(cu), &h); err != nil || !ok || h.Canonical == cu {
		return false, err
	}
	host := frontier.HostKey(h.Canonical)
	var hs aliasHost
	if _, err := getJSON(r, "alias_host", host, &hs); err != nil {
		return false, err
	}
	if hs.Distrusted || hs.Held >= maxHeldPerHost || !ct.e.inScope(h.Canonical) || !ct.e.inScope(cu) {
		return false, nil
	}
	if hs.Confirmed == 0 && !hs.Sampled {
		// The host's first alias is fetched, as a check of the hints that
		// no page's claim has checked yet (a page naming itself, a
		// sitemap's form): checked as if it named the canonical URL.
		hs.Sampled = true
		if err := ct.tx.PutEvidence("alias_host", host, hs); err != nil {
			return false, err
		}
		return false, ct.tx.PutEvidence("alias_sample", cu, h)
	}
	cpID, usable, err := counterpartUsable(ct.tx, h.Canonical)
	if err != nil {
		return false, err
	}
	if !usable {
		if _, seen, err := ct.tx.SeenID(h.Canonical); err != nil || seen {
			return false, err // the canonical URL failed: fetch the alias
		}
		item, queued, err := ct.e.enqueue(ct.tx, h.Canonical, via.Depth+1, via.URL)
		if err != nil || !queued {
			return false, err
		}
		ct.queue(item)
		cpID = item.ID
	}
	if err := ct.listHeld(r, host, &hs, heldAlias{URL: cu, Depth: via.Depth + 1, Via: via.URL}); err != nil {
		return false, err
	}
	return true, ct.holdAlias(cu, h.Canonical, cpID, via)
}

// listHeld adds h to the aliases held on host's hints, in records of
// heldChunk (a host's record stays small).
func (ct *commitTx) listHeld(r EvidenceReader, host string, hs *aliasHost, h heldAlias) error {
	key := fmt.Sprintf("%s#%d", host, hs.Held/heldChunk)
	var held []heldAlias
	if _, err := getJSON(r, "alias_held", key, &held); err != nil {
		return err
	}
	hs.Held++
	if err := ct.tx.PutEvidence("alias_held", key, append(held, h)); err != nil {
		return err
	}
	return ct.tx.PutEvidence("alias_host", host, hs)
}

// holdAlias records alias cu as represented by canonical URL c (id cID).
func (ct *commitTx) holdAlias(cu, c string, cID uint64, via *storage.Page) error {
	rec := &storage.Page{
		URL: cu, Host: frontier.HostKey(cu), Depth: via.Depth + 1, Via: via.URL,
		Class: storage.ClassMirrorSkipped, DuplicateOf: c, OriginalID: cID,
		Method: aliasMethod, FetchedAt: time.Now().UTC(),
	}
	if err := ct.tx.AddDependent(c, storage.Dependent{ID: cID, URL: cu, Depth: via.Depth + 1, Via: via.URL}); err != nil {
		return err
	}
	ct.skipped++
	return ct.tx.PutSkipped(rec)
}

// aliasRecorded learns the hints of a page fetched with content p: its
// canonical URL stands for its own alias key and for p's, and the claim is
// checked against the duplicate decision; p itself may be a canonical URL
// whose claims wait on it.
func (ct *commitTx) aliasRecorded(p *storage.Page) error {
	r, ok := ct.tx.(EvidenceReader)
	if !ok || !ct.e.o.CanonicalHints || !hasContent(p) {
		return nil
	}
	if err := ct.checkClaims(r, p); err != nil {
		return err
	}
	sampled, err := ct.checkSample(r, p)
	if err != nil {
		return err
	}
	if p.Canonical == "" || p.NoIndex {
		return nil
	}
	c, err := frontier.Canonicalize(p.Canonical, nil)
	if err != nil {
		return nil
	}
	c = ct.e.params.Canonical(c)
	host := frontier.HostKey(c)
	var hs aliasHost
	if _, err := getJSON(r, "alias_host", host, &hs); err != nil || hs.Distrusted {
		return err
	}
	if err := ct.tx.PutEvidence("alias", AliasKey(c), aliasHint{Canonical: c, Source: "rel"}); err != nil {
		return err
	}
	if c == p.URL || c == p.ServedURL() || c == sampled {
		return nil // no claim, or checked as a sample already
	}
	if err := ct.tx.PutEvidence("alias", AliasKey(p.URL), aliasHint{Canonical: c, Source: "rel"}); err != nil {
		return err
	}
	return ct.claim(r, p, c, host, &hs)
}

// checkSample checks the hint that alias p, fetched as its host's sample,
// stands for the URL returned.
func (ct *commitTx) checkSample(r EvidenceReader, p *storage.Page) (string, error) {
	var sample aliasHint
	b, ok, err := ct.tx.TakeEvidence("alias_sample", p.URL)
	if err != nil || !ok {
		return "", err
	}
	if err := json.Unmarshal(b, &sample); err != nil {
		return "", fmt.Errorf("alias_sample record %s: %w", p.URL, err)
	}
	host := frontier.HostKey(sample.Canonical)
	var hs aliasHost
	if _, err := getJSON(r, "alias_host", host, &hs); err != nil || hs.Distrusted || sample.Canonical == p.URL {
		return "", err
	}
	return sample.Canonical, ct.claim(r, p, sample.Canonical, host, &hs)
}

// claim checks p's claim that c is its canonical URL, now if c was fetched,
// else when it is. c is not queued for the check: the canonical link is not
// a link to follow (an alias held on c queues it).
func (ct *commitTx) claim(r EvidenceReader, p *storage.Page, c, host string, hs *aliasHost) error {
	id, seen, err := ct.tx.SeenID(c)
	if err != nil {
		return err
	}
	if seen {
		cp, err := ct.tx.GetPage(id)
		if err == nil && hasContent(cp) {
			return ct.checked(host, hs, p, cp)
		}
		if err != nil && err != storage.ErrNotFound {
			return err
		}
		if err == nil {
			return nil // fetched without content: no check, no hint
		}
	}
	var cl aliasClaims
	if _, err := getJSON(r, "alias_claim", c, &cl); err != nil {
		return err
	}
	cl.IDs = append(cl.IDs, p.ID)
	if len(cl.IDs) > maxPendingClaims {
		return ct.distrust(host, hs, fmt.Sprintf("%d pages name %s canonical before it was fetched", len(cl.IDs), c))
	}
	return ct.tx.PutEvidence("alias_claim", c, cl)
}

// checkClaims checks the claims waiting on p, a canonical URL just fetched.
func (ct *commitTx) checkClaims(r EvidenceReader, p *storage.Page) error {
	var cl aliasClaims
	b, ok, err := ct.tx.TakeEvidence("alias_claim", p.URL)
	if err != nil || !ok {
		return err
	}
	if err := json.Unmarshal(b, &cl); err != nil {
		return fmt.Errorf("alias_claim record %s: %w", p.URL, err)
	}
	host := frontier.HostKey(p.URL)
	var hs aliasHost
	if _, err := getJSON(r, "alias_host", host, &hs); err != nil || hs.Distrusted {
		return err
	}
	for _, id := range cl.IDs {
		a, err := ct.tx.GetPage(id)
		if err != nil {
			return err
		}
		if err := ct.checked(host, &hs, a, p); err != nil || hs.Distrusted {
			return err
		}
	}
	return nil
}

// checked settles the claim of page a that c is its canonical URL: true
// when the crawl's duplicate decision put them in one group.
func (ct *commitTx) checked(host string, hs *aliasHost, a, c *storage.Page) error {
	if dupGroup(a) == dupGroup(c) {
		hs.Confirmed++
		return ct.tx.PutEvidence("alias_host", host, hs)
	}
	hs.Wrong++
	return ct.distrust(host, hs, fmt.Sprintf("%s names %s canonical, but they are not duplicates", a.URL, c.URL))
}

// dupGroup is the page a duplicate belongs to: its original, else itself.
func dupGroup(p *storage.Page) uint64 {
	if p.Class.Duplicate() && p.OriginalID != 0 {
		return p.OriginalID
	}
	return p.ID
}

// distrust stops using host's hints and queues the aliases held on them.
func (ct *commitTx) distrust(host string, hs *aliasHost, reason string) error {
	hs.Distrusted, hs.Reason = true, reason
	for c := 0; c*heldChunk < hs.Held; c++ {
		b, ok, err := ct.tx.TakeEvidence("alias_held", fmt.Sprintf("%s#%d", host, c))
		if err != nil || !ok {
			return err
		}
		var held []heldAlias
		if err := json.Unmarshal(b, &held); err != nil {
			return fmt.Errorf("alias_held record %s#%d: %w", host, c, err)
		}
		for _, h := range held {
			item, queued, err := ct.e.enqueue(ct.tx, h.URL, h.Depth, h.Via)
			if err != nil {
				return err
			}
			if queued {
				ct.queue(item)
				hs.Withdrawn++
			}
		}
	}
	hs.Held = 0
	return ct.tx.PutEvidence("alias_host", host, hs)
}

// sitemapAlias records that a sitemap listed cu: its alias key stands for
// it, unless a page's rel=canonical said otherwise.
func sitemapAlias(tx Tx, cu string) error {
	r, ok := tx.(EvidenceReader)
	if !ok {
		return nil
	}
	key := AliasKey(cu)
	var h aliasHint
	if ok, err := getJSON(r, "alias", key, &h); err != nil || ok {
		return err
	}
	return tx.PutEvidence("alias", key, aliasHint{Canonical: cu, Source: "sitemap"})
}

// Aliases is what the canonical hints of the crawl did so far (the summary
// printed after a run): nil when no hint was used or checked.
func (e *Engine) Aliases() (*report.Aliases, error) { return aliasReport(e.sctx, e.st) }

// aliasReport is the report's account of the canonical hints: nil when none
// was used or checked.
func aliasReport(ctx context.Context, st Store) (*report.Aliases, error) {
	a := &report.Aliases{Distrusted: []report.HostNote{}}
	err := st.ForEachSkipped(ctx, func(p *storage.Page) error {
		if p.Method == aliasMethod {
			a.RequestsSaved++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = st.ForEachEvidence(ctx, "alias_host", func(host string, v []byte) error {
		var hs aliasHost
		if err := json.Unmarshal(v, &hs); err != nil {
			return fmt.Errorf("alias_host record %s: %w", host, err)
		}
		a.Withdrawn += hs.Withdrawn
		a.ClaimsChecked += hs.Confirmed + hs.Wrong
		a.ClaimsWrong += hs.Wrong
		if hs.Distrusted {
			a.Distrusted = append(a.Distrusted, report.HostNote{Host: host, Kind: "canonical_distrusted", Detail: hs.Reason})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.RequestsSaved+a.Withdrawn+a.ClaimsChecked+a.ClaimsWrong+len(a.Distrusted) == 0 {
		return nil, nil
	}
	return a, nil
}
