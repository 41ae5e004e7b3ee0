package redisstate

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Page budgets crawl-wide (crawl.max_pages, crawl.max_pages_per_host). A
// lease spends one page of the budget when it is taken and gives it back when
// it goes back to its queue without a page (robots.txt first, a back-off, a
// cancelled request), as the local frontier counts leases. The crawl's budget
// is a counter, hs:{C}:budget, reserved by budgetScript in the pipeline of
// the pop; a host's is a field of hs:{C/pN}:hb (the host's partition),
// reserved by the pop itself (popScript) and given back in the same script
// that puts the item back (putBackScript) or requeues it for the next holder
// of the partition (requeueAll). Items a killed worker held in flight are
// given back to the crawl's counter by the worker that requeues them (in a
// call of its own: the counter is in another slot).

func (c *Crawl) budgetKey() string          { return "hs:{" + c.name + "}:budget" }
func (c *Crawl) hostBudgetKey(p int) string { return c.partTag(p) + "hb" }

// budgetScript spends one page of the crawl's budget if any is left.
// KEYS: the counter. ARGV: the budget. Returns 1 when spent, 0 when none is left.
var budgetScript = redis.NewScript(`#!lua
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
return 1
`)

// refundScript gives n pages back to the crawl's budget (never below 0).
// KEYS: the counter. ARGV: n. Returns the pages given back.
var refundScript = redis.NewScript(`#!lua
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.min(v, tonumber(ARGV[1]))
if n > 0 then redis.call('DECRBY', KEYS[1], n) end
return n
`)

// PagesSpent returns the pages of the crawl's budget spent so far (leases
// taken and not given back), by every worker.
func (c *Crawl) PagesSpent(ctx context.Context) (int64, error) {
	n, err := c.rdb.Get(ctx, c.budgetKey()).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, wrap("budget", err)
}

// HostPagesSpent returns the pages of host's budget spent so far.
func (c *Crawl) HostPagesSpent(ctx context.Context, host string) (int64, error) {
	n, err := c.rdb.HGet(ctx, c.hostBudgetKey(c.PartitionOf(host)), host).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, wrap("budget", err)
}

// refund gives n pages back to the crawl's budget (when it has one).
func (f *Frontier) refund(ctx context.Context, n int64) {
	if f.o.MaxPages <= 0 || n <= 0 {
		return
	}
	if _, err := f.c.run(ctx, "refund budget", refundScript, []string{f.c.budgetKey()}, n); err != nil {
		// The pages stay spent: the crawl fetches fewer than its budget.
		f.logger.Warn("cannot give pages back to the crawl's budget", "pages", n, "err", err)
		return
	}
	f.mu.Lock()
	f.spentAt = time.Time{}
	f.mu.Unlock()
}

// refundRequeued gives back the pages of the items the worker requeued when
// it took partitions (what their last holder had in flight).
func (f *Frontier) refundRequeued(ctx context.Context) {
	if n := f.m.takeRequeued(); n > 0 {
		f.refund(ctx, n)
	}
}

// budgetSpent reports whether this worker last found the crawl's budget
// spent, less than 500 ms ago (pages given back by other workers are seen
// after that).
func (f *Frontier) budgetSpent() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.o.MaxPages > 0 && !f.spentAt.IsZero() && time.Since(f.spentAt) < 500*time.Millisecond
}
