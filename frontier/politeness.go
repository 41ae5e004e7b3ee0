package frontier

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The politeness and back-off rules, in the one place both frontiers (this
// package's, and the Redis backend's in cluster/redisstate) take them from.

// Gap is how long a host (and its IP) waits after a request answered in
// responseTime: the delay, or the host's Crawl-delay when longer, or, with
// an adaptive factor, that many times the response time (up to MaxDelay)
// when longer still. (Before this was one function, an adaptive gap capped
// at MaxDelay could cut a longer Crawl-delay.)
func (o Options) Gap(crawlDelay, responseTime time.Duration) time.Duration {
	gap := max(o.Delay, crawlDelay)
	if o.AdaptiveFactor > 0 {
		// Capped at MaxDelay, and never shorter than the Crawl-delay.
		gap = max(gap, min(time.Duration(o.AdaptiveFactor*float64(responseTime)), o.MaxDelay))
	}
	return gap
}

// Backoff is the wait after the failures-th failure in a row (a network
// failure, 429 or 503): BackoffBase doubled per failure up to BackoffMax,
// with full jitter on its upper half so that hosts do not retry in
// lockstep, or the server's Retry-After when longer (up to BackoffMax).
func (o Options) Backoff(failures int, retryAfter time.Duration) time.Duration {
	d := o.BackoffBase
	for i := 1; i < failures && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	if half := d / 2; half > 0 {
		d = half + time.Duration(rand.Int64N(int64(half)+1))
	}
	if retryAfter > d {
		d = min(retryAfter, o.BackoffMax)
	}
	return d
}

// GiveUpReason is the reason a host is given up for after failures in a
// row, of which o is the last.
func GiveUpReason(failures int, o Outcome) string {
	switch {
	case !o.Blocked:
		return fmt.Sprintf("%d consecutive failures (last status %d)", failures, o.Status)
	case o.GiveUp && o.Reason != "":
		return o.Reason
	case o.Reason != "":
		return fmt.Sprintf("robots.txt unavailable %d times in a row, last: %s", failures, o.Reason)
	}
	return fmt.Sprintf("robots.txt unavailable %d times in a row", failures)
}

// BacksOff tells whether an outcome backs its host off: a request that
// failed or was answered 429 or 503.
func (o Outcome) BacksOff() bool {
	return o.Requested && (o.Failed || o.Status == 429 || o.Status == 503)
}
