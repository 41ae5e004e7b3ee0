package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Releases of IP clocks ride in the worker's next round trip. Release does
// not send an IP's release alone: it is kept until the next round trip this
// worker makes anyway — a pop's pipeline (reservePop), a page's prefetch
// and first check-and-add round (seamTx.prefetch), a commit (seamTx.commit)
// — and goes alone only when none comes: at the item's Finish, or when Next
// finds nothing to pop (its hosts are busy until it goes). A fetched page's
// release then costs no round trip of its own.
//
// Politeness holds as when the release was sent at once: the release
// script gets the gap less the time the release waited (rounded up to the
// millisecond), so the IP's next request, by any worker, waits the gap from
// Release (after the request ended), never less; until the release is sent
// the IP reads as held, and other workers look again soon (reservePop). The
// host stays busy in this worker until then, so that its next pop does not
// find its own IP held. A reservation more than half its hold old is
// released at once: a release late past the hold would let the reservation
// run out before it, and the IP's gap with it.

// ipRelease is a release kept for the next round trip.
type ipRelease struct {
	it  *frontier.Item
	res *Reservation
	gap time.Duration
	at  time.Time // Release: the gap runs from here
}

// gapLeft is the gap in ms the release script sets when sent at now: the
// gap less the time since Release, rounded up.
func (r *ipRelease) gapLeft(now time.Time) int64 {
	left := r.gap - now.Sub(r.at)
	if left <= 0 {
		return 0
	}
	return int64((left + time.Millisecond - 1) / time.Millisecond)
}

// keepRelease keeps it's release for the next round trip, unless its
// reservation is too old for that (then the caller sends it).
func (f *Frontier) keepRelease(it *frontier.Item, l *fleased, gap time.Duration, now time.Time) bool {
	if now.Sub(l.reservedAt) >= f.hold/2 {
		return false
	}
	f.mu.Lock()
	f.releases = append(f.releases, &ipRelease{it: it, res: l.res, gap: gap, at: now})
	f.mu.Unlock()
	return true
}

// takeReleases takes the releases kept, to send in a round trip about to
// go. A nil Frontier has none.
func (f *Frontier) takeReleases() []*ipRelease {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.releases
	f.releases = nil
	return rs
}

// releasesKept reports whether any release is kept.
func (f *Frontier) releasesKept() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.releases) > 0
}

// releasePending reports whether it's release is kept.
func (f *Frontier) releasePending(it *frontier.Item) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.releases {
		if r.it == it {
			return true
		}
	}
	return false
}

// queueReleases adds rs's release scripts to pipe (before the round trip's
// own commands: a pop of the same IP in it then finds it released).
func (f *Frontier) queueReleases(ctx context.Context, pipe redis.Pipeliner, rs []*ipRelease) []*redis.Cmd {
	now := time.Now()
	cmds := make([]*redis.Cmd, len(rs))
	for i, r := range rs {
		cmds[i] = ipReleaseScript.EvalSha(ctx, pipe, []string{f.c.ipKey(r.res.ip)}, r.gapLeft(now), r.res.token)
	}
	return cmds
}

// releasesSent ends rs once their round trip is back (perr: the pipeline's
// error). A release that failed there (Redis lost its scripts, the round
// trip's context ended) is sent again alone, as Release sent it before
// (EVAL, without the round trip's context); one that fails again is sent
// when Redis answers again (reconcile.go), at the latest it runs out after
// its hold. The hosts' own clocks start (the gap left from now) and they may
// be leased again.
func (f *Frontier) releasesSent(ctx context.Context, rs []*ipRelease, cmds []*redis.Cmd, perr error) {
	for i, r := range rs {
		err := perr
		if i < len(cmds) {
			if err = cmds[i].Err(); err == nil && cmds[i].Val() == nil {
				err = perr // the pipeline cut short: no reply
			}
		}
		if err != nil {
			err = f.c.ReleaseIP(context.WithoutCancel(ctx), r.res, time.Duration(r.gapLeft(time.Now()))*time.Millisecond)
		}
		if err != nil {
			f.lostIP(r.res, time.Duration(r.gapLeft(time.Now()))*time.Millisecond) // released when Redis answers again (reconcile.go)
			f.logger.Warn("cannot release an IP's clock (released when Redis answers again)", "host", r.it.Host, "err", err)
		}
		left := time.Duration(r.gapLeft(time.Now())) * time.Millisecond
		f.mu.Lock()
		hs := f.host(r.it.Host)
		if left > 0 {
			hs.notBefore = laterOf(hs.notBefore, time.Now().Add(left))
		}
		hs.busy = false
		f.mu.Unlock()
	}
	if len(rs) > 0 {
		f.notify()
	}
}

// sendReleases sends the releases kept in a round trip of their own.
func (f *Frontier) sendReleases(ctx context.Context) {
	rs := f.takeReleases()
	if len(rs) == 0 {
		return
	}
	var cmds []*redis.Cmd
	_, err := f.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = f.queueReleases(ctx, p, rs)
		return nil
	})
	f.releasesSent(ctx, rs, cmds, err)
}

// runWithReleases runs script s as c.run does, with fr's kept releases in
// the same pipeline: one round trip.
func (c *Crawl) runWithReleases(ctx context.Context, fr *Frontier, op string, s *redis.Script, keys []string, args ...any) (any, error) {
	rs := fr.takeReleases()
	if len(rs) == 0 {
		return c.run(ctx, op, s, keys, args...)
	}
	var rcmds []*redis.Cmd
	var cmd *redis.Cmd
	_, perr := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rcmds = fr.queueReleases(ctx, p, rs)
		cmd = s.EvalSha(ctx, p, keys, args...)
		return nil
	})
	fr.releasesSent(ctx, rs, rcmds, perr)
	v, err := cmd.Result()
	if err == nil && v == nil {
		err = perr
	}
	if isNoScript(err) {
		return c.run(ctx, op, s, keys, args...) // EVAL: loads it
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	return v, nil
}
