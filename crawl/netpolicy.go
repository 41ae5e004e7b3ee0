package crawl

import (
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// HostChecker refuses hosts by address policy before any request or lookup:
// IP literals and the names of cloud metadata services (*fetch.Fetcher
// implements it). Names resolving to a refused address are caught by the
// fetcher when it connects.
type HostChecker interface {
	CheckHost(host string) error
}

// robotsOutcome is the frontier outcome of a lease whose host's robots.txt
// is unavailable: blocked, with the cause for the give-up record, retried
// after retry, or given up at once when retrying cannot cure the cause (TLS
// failure, address refused by policy, no such host, connection refused).
func robotsOutcome(rules *fetch.Robots, fetched bool, retry time.Duration) frontier.Outcome {
	o := frontier.Outcome{Requested: fetched, Requeue: true, Wait: retry, Blocked: true,
		Reason: rules.Cause()}
	if rules.Incurable() {
		o.GiveUp = true
		o.Reason = "robots.txt unavailable, not retried: " + rules.Cause()
	}
	return o
}
