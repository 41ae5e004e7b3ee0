package redisstate

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Host failures and give-ups crawl-wide. A host's consecutive failures
// (network failures, 429/503, robots.txt unavailable) are counted in its
// partition, hs:{C/pN}:hf (host -> count, or "d..." once given up), so the
// next holder of the partition goes on counting where the last one stopped:
// the back-off grows from the count, and the host is given up at
// politeness.max_failures whichever workers made the requests. The pop reads
// the count (popScript) and refuses a host given up, so no worker requests
// it again. Exactly one worker's failScript call gives a host up: that
// worker reports it (Frontier.GiveUps), so the give-up is recorded once.
// The back-off's wait itself is in the IP's clock (ReleaseIP's gap), which
// every worker reads already; the adaptive delay likewise.
//
// A given-up host's queue is drained into records, as one process records
// the URLs it held for a host it gave up: the holder of the host's partition
// pops the rest of its queue, URL by URL, in drain mode (popScript), and
// its engine records each (frontier.Item.GivenUp) without a request. So the
// merged report counts them and Redis frees them. The give-up's value,
// "d" + "b" (robots.txt unavailable: robots_disallowed) or "e" (failures:
// error) + the reason, tells the drainer what to record.

func (c *Crawl) hostFailKey(p int) string { return c.partTag(p) + "hf" }

// failScript counts one failure of a host and gives it up at the limit (or
// at once with ARGV[3] "1"): its value becomes "d" .. ARGV[4] (the kind and
// reason). The host stays in the host set: its queue is drained.
// KEYS: host failures. ARGV: host, max failures, give up now, give-up value.
// Returns {failures, 1 if this call gave the host up}, or {-1, 0} when it
// was given up already.
var failScript = redis.NewScript(`#!lua
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, 1) == 'd' then return {-1, 0} end
local n = tonumber(v or '0') + 1
if n >= tonumber(ARGV[2]) or ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], 'd' .. ARGV[4])
  return {n, 1}
end
redis.call('HSET', KEYS[1], ARGV[1], n)
return {n, 0}
`)

// resetScript ends a host's run of failures, unless it was given up.
// KEYS: host failures. ARGV: host.
var resetScript = redis.NewScript(`#!lua
if string.sub(redis.call('HGET', KEYS[1], ARGV[1]) or '', 1, 1) ~= 'd' then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 1
`)

// hostFailure is failScript's answer.
type hostFailure struct {
	failures int  // consecutive failures, crawl-wide
	gaveUp   bool // this call gave the host up: report it
	dead     bool // given up (by this call or before)
	reason   string
}

// giveUpValue is the value of a given-up host in the failures hash (after
// its "d"), and givenUp reads it back.
func giveUpValue(g frontier.GiveUp) string {
	if g.Blocked {
		return "b" + g.Reason
	}
	return "e" + g.Reason
}

func givenUp(host, v string) frontier.GiveUp {
	g := frontier.GiveUp{Host: host, Reason: "given up by another worker"}
	if len(v) > 2 {
		g.Blocked, g.Reason = v[1] == 'b', v[2:]
	}
	return g
}

// fail counts a failure of host crawl-wide. When Redis cannot be reached the
// count is this worker's (local: its last known count plus one).
func (f *Frontier) fail(ctx context.Context, host string, local int, o frontier.Outcome) hostFailure {
	p := f.c.PartitionOf(host)
	now := o.Blocked && o.GiveUp
	// The reason if this call gives the host up: at max_failures exactly
	// (the count grows by one a call), or now.
	reason := frontier.GiveUpReason(f.o.MaxFailures, o)
	v, err := f.c.run(ctx, "host failure", failScript, []string{f.c.hostFailKey(p)},
		host, f.o.MaxFailures, btoi(now), giveUpValue(frontier.GiveUp{Reason: reason, Blocked: o.Blocked}))
	r, ok := v.([]any)
	if err != nil || !ok || len(r) != 2 {
		f.logger.Warn("cannot count a host's failure crawl-wide (counted here)", "host", host, "err", err)
		n := local + 1
		return hostFailure{failures: n, gaveUp: n >= f.o.MaxFailures || now, dead: n >= f.o.MaxFailures || now,
			reason: frontier.GiveUpReason(n, o)}
	}
	n, _ := r[0].(int64)
	if n < 0 {
		return hostFailure{failures: f.o.MaxFailures, dead: true}
	}
	gave := r[1] == int64(1)
	return hostFailure{failures: int(n), gaveUp: gave, dead: gave, reason: reason}
}

// succeeded ends host's run of failures crawl-wide (a round trip only after
// failures).
func (f *Frontier) succeeded(ctx context.Context, host string) {
	p := f.c.PartitionOf(host)
	if _, err := f.c.run(ctx, "host failures", resetScript, []string{f.c.hostFailKey(p)}, host); err != nil {
		f.logger.Warn("cannot reset a host's failures crawl-wide", "host", host, "err", err)
	}
}

// HostFailures returns host's consecutive failures crawl-wide and whether it
// was given up.
func (c *Crawl) HostFailures(ctx context.Context, host string) (int, bool, error) {
	v, err := c.rdb.HGet(ctx, c.hostFailKey(c.PartitionOf(host)), host).Result()
	if err == redis.Nil {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("host failures", err)
	}
	if strings.HasPrefix(v, "d") {
		return 0, true, nil
	}
	var n int
	_, err = fmt.Sscan(v, &n)
	return n, false, err
}

// countFailure counts o's failure of host crawl-wide (nil: o is none), or
// ends host's run of failures after a request that did not fail.
func (f *Frontier) countFailure(ctx context.Context, host string, o frontier.Outcome) *hostFailure {
	failed := o.Blocked || o.BacksOff()
	f.mu.Lock()
	local := f.host(host).failures
	f.mu.Unlock()
	if !failed {
		if o.Requested && local > 0 {
			f.succeeded(ctx, host)
		}
		return nil
	}
	r := f.fail(ctx, host, local, o)
	return &r
}
