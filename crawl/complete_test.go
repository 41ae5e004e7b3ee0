package crawl

import (
	"context"
	"errors"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// A run whose frontier cannot count its queue (a shared crawl's Redis does
// not answer: frontier.Stats.Err) is not recorded complete: an unknown
// queue is not an empty one.
func TestRunNotCompleteWhenQueueUnknown(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{{nil, "true"}, {errors.New("redis queued: connection lost"), "false"}} {
		e, s, f := testEngine(t, Options{})
		f.statsErr = c.err
		if err := e.Run(context.Background(), context.Background()); err != nil {
			t.Fatalf("run (queue error %v): %v", c.err, err)
		}
		if got := string(s.meta[storage.MetaComplete]); got != c.want {
			t.Errorf("queue error %v: complete %q, want %q", c.err, got, c.want)
		}
	}
}
