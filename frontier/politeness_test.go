package frontier

import (
	"testing"
	"time"
)

// TestPolitenessRules: the gap, back-off and give-up reason both frontiers
// (this one and cluster/redisstate's) take from Options.Gap,
// Options.Backoff and GiveUpReason.
func TestPolitenessRules(t *testing.T) {
	o := Options{Delay: time.Second, MaxDelay: 30 * time.Second, AdaptiveFactor: 2,
		BackoffBase: time.Second, BackoffMax: time.Minute}
	gaps := []struct {
		crawlDelay, resp, want time.Duration
	}{
		{0, 100 * time.Millisecond, time.Second},                   // the delay
		{5 * time.Second, 100 * time.Millisecond, 5 * time.Second}, // Crawl-delay, longer
		{0, 3 * time.Second, 6 * time.Second},                      // adaptive: twice the response time
		{0, time.Minute, 30 * time.Second},                         // adaptive, capped at MaxDelay
		{40 * time.Second, time.Minute, 40 * time.Second},          // a longer Crawl-delay is not cut by MaxDelay
	}
	for _, g := range gaps {
		if got := o.Gap(g.crawlDelay, g.resp); got != g.want {
			t.Errorf("Gap(crawl-delay %v, response %v) = %v, want %v", g.crawlDelay, g.resp, got, g.want)
		}
	}
	noAdapt := o
	noAdapt.AdaptiveFactor = 0
	if got := noAdapt.Gap(0, time.Minute); got != time.Second {
		t.Errorf("Gap without an adaptive factor = %v, want the delay", got)
	}
	// Back-off: base doubled per failure up to the maximum, jittered within
	// its upper half; a longer Retry-After wins, up to the maximum.
	for failures, full := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 30: time.Minute} {
		for range 50 {
			if got := o.Backoff(failures, 0); got < full/2 || got > full {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", failures, got, full/2, full)
			}
		}
	}
	if got := o.Backoff(1, 20*time.Second); got != 20*time.Second {
		t.Errorf("Backoff with Retry-After 20s = %v, want 20s", got)
	}
	if got := o.Backoff(1, time.Hour); got != time.Minute {
		t.Errorf("Backoff with Retry-After 1h = %v, want BackoffMax", got)
	}
	reasons := []struct {
		o    Outcome
		want string
	}{
		{Outcome{Requested: true, Status: 503}, "5 consecutive failures (last status 503)"},
		{Outcome{Blocked: true}, "robots.txt unavailable 5 times in a row"},
		{Outcome{Blocked: true, Reason: "timeout"}, "robots.txt unavailable 5 times in a row, last: timeout"},
		{Outcome{Blocked: true, GiveUp: true, Reason: "robots.txt answered 401"}, "robots.txt answered 401"},
	}
	for _, r := range reasons {
		if got := GiveUpReason(5, r.o); got != r.want {
			t.Errorf("GiveUpReason(5, %+v) = %q, want %q", r.o, got, r.want)
		}
	}
	for _, c := range []struct {
		o    Outcome
		want bool
	}{
		{Outcome{Requested: true, Status: 429}, true},
		{Outcome{Requested: true, Status: 503}, true},
		{Outcome{Requested: true, Failed: true}, true},
		{Outcome{Requested: true, Status: 500}, false},
		{Outcome{Requested: false, Failed: true}, false},
	} {
		if got := c.o.BacksOff(); got != c.want {
			t.Errorf("%+v.BacksOff() = %v, want %v", c.o, got, c.want)
		}
	}
}
