package crawl

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// The lease fence of a shared crawl's requests (docs/SCALE.md, "The lease
// check before a request"). Every request a lease leads to, the page's and
// robots.txt's, goes only while the lease is proven to last (CheckLease:
// the lease the item was popped under, with at least the margin left). A
// page is checked before its fetch starts; both are (re)checked once their
// connection is obtained, right before the request is written (a
// fetch.Fence), when no check passed within recheckAfter: the time spent
// resolving the name, connecting and in TLS is then outside the window, and a
// page whose connection was at hand at once (a kept-alive one, or loopback)
// costs no second round trip.

// recheckAfter is how long a passed lease check stands for a request not
// yet written: a tenth of the margin. A request is written with at least
// 9/10 of the margin of its lease left by Redis's last answer (900 ms at the
// default TTL of 3 s), and a re-check costs a round trip to Redis only to a
// request that already waited that long for its connection (100 ms: a
// loopback Redis round trip of 15 µs adds 0.015% to it, a LAN one of 1 ms 1%).
func recheckAfter(margin time.Duration) time.Duration { return margin / 10 }

// leaseFence checks the lease of one leased item for its requests.
type leaseFence struct {
	lc    LeaseChecker
	it    *frontier.Item
	fresh time.Duration
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time // when the last passed check was asked; zero: none
}

// newLeaseFence returns the fence of it's requests, nil when the frontier's
// leases cannot be lost (one process's).
func (e *Engine) newLeaseFence(it *frontier.Item) *leaseFence {
	lc, ok := e.fr.(LeaseChecker)
	if !ok {
		return nil
	}
	return &leaseFence{lc: lc, it: it, fresh: recheckAfter(lc.FenceMargin()), now: time.Now}
}

// check is nil when the lease is proven to last: a check passed less than
// fresh ago, else one asked now (counted from before it was sent).
func (f *leaseFence) check(ctx context.Context) error {
	now := f.now()
	f.mu.Lock()
	last := f.checked
	f.mu.Unlock()
	if !last.IsZero() && now.Sub(last) <= f.fresh {
		return nil
	}
	if err := f.lc.CheckLease(ctx, f.it); err != nil {
		return err
	}
	f.mu.Lock()
	f.checked = now
	f.mu.Unlock()
	return nil
}

// fenced returns ctx whose fetches ask the fence (nil: ctx) once their
// connection is obtained.
func (f *leaseFence) fenced(ctx context.Context) context.Context {
	if f == nil {
		return ctx
	}
	return fetch.WithFence(ctx, f.check)
}

// leaseLost logs a request not sent because its lease is not proven to last
// (what: "" for the URL, "robots.txt" for its host's), unless the crawl is
// stopping.
func (e *Engine) leaseLost(ctx context.Context, it *frontier.Item, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	if what != "" {
		what = " " + what
	}
	e.logger.Warn("not requesting"+what+": the lease of the URL's partition is not proven to last (the worker stalled?); the URL goes back to its queue",
		"url", it.Target(), "err", err)
}

// isFenced reports whether a fetch failed on its fence (nothing was sent).
func isFenced(err error) bool { return errors.Is(err, fetch.ErrFenced) }
