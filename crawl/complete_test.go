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

// A frontier that cannot go on (Next's error other than frontier.ErrDone: a
// shared crawl's state lost in Redis) stops the run with that error, and the
// run is not recorded complete, whatever an earlier run recorded. Before,
// the worker goroutines ended on it as on a finished crawl: the run said
// complete.
func TestRunStopsOnFrontierError(t *testing.T) {
	e, s, f := testEngine(t, Options{})
	lost := errors.New("shared crawl state lost: partition 3's keys are gone")
	f.nextErr = lost
	s.meta[storage.MetaComplete] = []byte("true") // an earlier run's
	err := e.Run(context.Background(), context.Background())
	if !errors.Is(err, lost) {
		t.Fatalf("run: %v, want the frontier's error", err)
	}
	if got := string(s.meta[storage.MetaComplete]); got != "false" {
		t.Errorf("complete %q after the frontier's error, want false", got)
	}
}
