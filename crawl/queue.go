package crawl

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Queueing: the seen-set's check-and-mark, the queue entry, and the hand-over
// to the frontier after the commit.

func (e *Engine) inScope(cu string) bool {
	if e.o.Scope != nil && !e.o.Scope.InScope(cu) {
		return false
	}
	return frontier.CheckTrap(cu, e.o.Trap) == nil
}

// follow queues cu if it is in scope, not a trap and not seen.
func (e *Engine) follow(tx Tx, cu string, depth int, via string) (frontier.Item, bool, error) {
	cu = e.params.Canonical(cu)
	if depth > e.o.MaxDepth || !e.inScope(cu) {
		return frontier.Item{}, false, nil
	}
	return e.enqueue(tx, cu, depth, via)
}

// enqueue marks cu seen and writes its queue entry, unless it was seen.
func (e *Engine) enqueue(tx Tx, cu string, depth int, via string) (frontier.Item, bool, error) {
	return e.enqueueItem(tx, cu, depth, via, false, 0)
}

// enqueueItem queues cu unless it was seen; hops is the number of redirects
// followed to reach it.
func (e *Engine) enqueueItem(tx Tx, cu string, depth int, via string, verify bool, hops int) (frontier.Item, bool, error) {
	return e.enqueueSample(tx, cu, depth, via, verify, hops, "")
}

// enqueueSample is enqueueItem, the item marked as a sample of the
// near-duplicate link monitor under prefix pair sample when set (one queue
// entry: a shared store's queue appends each PutQueue).
func (e *Engine) enqueueSample(tx Tx, cu string, depth int, via string, verify bool, hops int, sample string) (frontier.Item, bool, error) {
	if e.seenURLs.has(cu) {
		return frontier.Item{}, false, nil // marked: CheckAndMark would not mark it
	}
	id, fresh, err := tx.CheckAndMark(cu, tx.NewID)
	if err != nil || !fresh {
		return frontier.Item{}, false, err
	}
	host := frontier.HostKey(cu)
	it := frontier.Item{ID: id, URL: cu, Depth: depth, Via: via, Host: host, Seq: e.fr.Assign(host), Verify: verify, Hops: hops, Sample: sample}
	if err := tx.PutQueue(it); err != nil {
		return it, false, err
	}
	if err := tx.DeleteSkipped(cu); err != nil {
		return it, false, err
	}
	return it, true, nil
}

// queueWaiting queues again the URLs skipped waiting on u, their
// counterpart, when u will not stand for them: it failed, or it was skipped
// itself. Each is queued before its dependent record goes: a crash between
// two parts of the transaction (storage.Update) then leaves it queued twice
// at worst, never lost.
func (e *Engine) queueWaiting(tx Tx, u string) ([]frontier.Item, error) {
	deps, err := tx.Dependents(u)
	if err != nil {
		return nil, err
	}
	var items []frontier.Item
	for _, d := range deps {
		item, ok, err := e.requeueDependent(tx, d)
		if err != nil {
			return nil, err
		}
		if ok {
			items = append(items, item)
		}
		if err := tx.DeleteDependent(u, d); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// requeueDependent queues a URL that was skipped in favour of a counterpart
// that has now failed.
func (e *Engine) requeueDependent(tx Tx, d storage.Dependent) (frontier.Item, bool, error) {
	return e.requeueDependentAs(tx, d, false)
}

// requeueDependentAs is requeueDependent, the item marked for the
// verification stream when verify is set (one queue entry: a shared store's
// queue appends each PutQueue).
func (e *Engine) requeueDependentAs(tx Tx, d storage.Dependent, verify bool) (frontier.Item, bool, error) {
	if !d.Seen {
		return e.enqueueItem(tx, d.URL, d.Depth, d.Via, verify, 0)
	}
	rec, err := tx.GetPage(d.ID)
	if err != nil || rec.Class != storage.ClassMirrorSkipped {
		return frontier.Item{}, false, nil // fetched or queued again meanwhile
	}
	// Drop the skip record with the new queue entry, so that a second
	// reason to requeue (a withdrawn decision) cannot queue it twice. The
	// entry is written first: a crash between two parts of the transaction
	// then leaves both, never neither.
	host := frontier.HostKey(d.URL)
	it := frontier.Item{ID: d.ID, URL: d.URL, Depth: d.Depth, Via: d.Via, Host: host, Seq: e.fr.Assign(host), Verify: verify}
	if err := tx.PutQueue(it); err != nil {
		return frontier.Item{}, false, err
	}
	return it, true, tx.DeletePage(d.ID)
}

// redirect queues the target of a 3xx response p (of item it) as the next hop
// of its chain. The target stands for the URL that was linked, so it keeps
// that URL's depth (as Heritrix, which does not count redirect hops against
// max-hops); fetch.max_redirects bounds the chain instead: a redirect past it
// is not followed, and p is recorded as an error of class "redirect" naming
// the chain's length and the target it refused.
func (e *Engine) redirect(tx Tx, it *frontier.Item, p *storage.Page, location string) (frontier.Item, bool, error) {
	cu, base, ok := e.redirectTarget(it, location)
	if !ok {
		return frontier.Item{}, false, nil
	}
	if e.pastRedirectBound(it, p, cu) {
		return frontier.Item{}, false, nil
	}
	if it.Depth > e.o.MaxDepth || !e.inScope(cu) {
		return frontier.Item{}, false, nil
	}
	if cu == it.URL {
		return e.redirectToSelf(tx, it, p, base, location)
	}
	return e.enqueueItem(tx, cu, it.Depth, it.URL, false, it.Hops+1)
}

// pastRedirectBound is the one bound of every redirect chain, of pages and
// of sitemaps: when item it has followed fetch.max_redirects hops, its 3xx
// response p is recorded as an error of class "redirect" naming the chain's
// length and the target cu it refused, and the redirect is not followed.
func (e *Engine) pastRedirectBound(it *frontier.Item, p *storage.Page, cu string) bool {
	if it.Hops < e.o.MaxRedirects {
		return false
	}
	p.Class, p.ErrorClass = storage.ClassError, fetch.ClassRedirect
	p.Error = fmt.Sprintf("too many redirects: %d followed (fetch.max_redirects %d), not following HTTP %d to %s",
		it.Hops, e.o.MaxRedirects, p.Status, cu)
	return true
}

// redirectTarget is the canonical URL that a 3xx response to item it names
// in its Location header; false when there is none.
func (e *Engine) redirectTarget(it *frontier.Item, location string) (cu string, base *url.URL, ok bool) {
	if location == "" {
		return "", nil, false
	}
	base, _ = url.Parse(it.Target()) // Location is relative to the URL requested
	cu, err := frontier.Canonicalize(location, base)
	if err != nil {
		return "", nil, false
	}
	return e.params.Canonical(cu), base, true
}

// redirectToSelf handles a server that redirects the URL to itself but for
// session parameters (/ to /;jsessionid=R): it serves the page only under
// them. The same item is requested once more at the URL as written; the
// seen-set keeps the canonical form. A server that redirects that one too (a
// fresh id each time, no cookies kept) is recorded.
func (e *Engine) redirectToSelf(tx Tx, it *frontier.Item, p *storage.Page, base *url.URL, location string) (frontier.Item, bool, error) {
	written, err := url.Parse(location)
	if err != nil {
		return frontier.Item{}, false, nil
	}
	target := base.ResolveReference(written).String()
	if target == it.Target() {
		return frontier.Item{}, false, nil // redirects to itself: the seen-set ends it
	}
	if it.FetchURL != "" {
		p.Class, p.ErrorClass = storage.ClassError, fetch.ClassRedirect
		p.Error = fmt.Sprintf("redirect loop: HTTP %d to %s, the same page but for session parameters", p.Status, location)
		return frontier.Item{}, false, nil
	}
	item := frontier.Item{ID: it.ID, URL: it.URL, FetchURL: target, Depth: it.Depth, Via: it.Via,
		Host: it.Host, Seq: e.fr.Assign(it.Host), Verify: it.Verify, Sample: it.Sample, Hops: it.Hops + 1}
	return item, true, tx.PutQueue(item)
}

// push hands committed queue entries to the frontier, first telling it which
// IP each new host shares its politeness clock with.
func (e *Engine) push(items []frontier.Item) {
	for _, it := range items {
		e.newHost(it.Host)
	}
	e.fr.Push(items...)
}

// newHost groups a host by IP the first time the engine sees it.
func (e *Engine) newHost(host string) {
	e.hostMu.Lock()
	first := !e.hostsSeen[host]
	e.hostsSeen[host] = true
	e.hostMu.Unlock()
	if first {
		e.politeKey(host)
	}
}

// politeKey groups hosts by IP address. IP literals are grouped at once; names
// are queued for the lookup pool (resolve.go) and grouped when the answer
// comes. A name the address policy refuses outright is not looked up.
func (e *Engine) politeKey(host string) {
	h := hostOnly(host)
	if ip := net.ParseIP(h); ip != nil {
		e.fr.SetPoliteKey(host, "ip:"+ip.String())
		return
	}
	if e.o.Addresses != nil && e.o.Addresses.CheckHost(host) != nil {
		e.fr.SetPoliteKey(host, host)
		return
	}
	// Hold the host until it is grouped, so that its first request (its
	// robots.txt) already waits for the clock of its IP.
	e.fr.AwaitPoliteKey(host)
	e.lq.push(host)
}

// hostOnly strips the port and the IPv6 brackets of a host key.
func hostOnly(host string) string {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	return strings.Trim(h, "[]")
}
