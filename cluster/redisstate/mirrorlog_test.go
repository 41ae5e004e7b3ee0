//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

var errPageFailed = errors.New("page failed")

// Three workers append to the mirror log in their commits while two
// followers read it: each follower gets every committed entry once, both in
// the same order, each worker's in its commit order; a failed transaction
// appends nothing and one run again after a conflict appends once. Replay
// gives the same order. The lag from the append to a follower is measured.
func TestMirrorLogOrderAndLag(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const writers, n = 3, 300
	stores := make([]*Store, writers)
	var c0 *Crawl
	for w := range stores {
		c, st := storeOn(t, srv, "t", nil)
		stores[w] = st
		if w == 0 {
			c0 = c
		}
	}
	type got struct {
		entries []string
		lags    []time.Duration
	}
	followers := make([]*got, 2)
	var mu sync.Mutex
	var fwg sync.WaitGroup
	for i := range followers {
		g := &got{}
		followers[i] = g
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			err := c0.MirrorLog().Follow(ctx, "", func(ens []crawl.MirrorEntry) error {
				mu.Lock()
				defer mu.Unlock()
				for _, en := range ens {
					g.entries = append(g.entries, string(en.Data))
					g.lags = append(g.lags, time.Since(en.At))
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("follow: %v", err)
			}
		}()
	}
	var wg sync.WaitGroup
	for w, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				err := st.Update(ctx, func(tx crawl.Tx) error {
					if err := tx.(crawl.MirrorAppender).AppendMirror([]byte(fmt.Sprintf("w%d:%03d", w, i))); err != nil {
						return err
					}
					if i%50 == 7 {
						return errPageFailed // appends nothing
					}
					// Every worker marks the same URLs: the losers of a
					// race run fn again.
					_, _, err := tx.CheckAndMark(fmt.Sprintf("http://race.test/%d", i), tx.NewID)
					return err
				})
				if err != nil && !errors.Is(err, errPageFailed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := writers * (n - n/50)
	deadline := time.Now().Add(hangBound) // only a hang outlasts it (it was 20 s)
	for {
		mu.Lock()
		done := len(followers[0].entries) >= want && len(followers[1].entries) >= want
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	fwg.Wait()
	for i, g := range followers {
		if len(g.entries) != want {
			t.Fatalf("follower %d: %d entries, want %d", i, len(g.entries), want)
		}
		last := map[string]string{}
		seen := map[string]bool{}
		for _, e := range g.entries {
			if seen[e] {
				t.Fatalf("follower %d: %s twice", i, e)
			}
			seen[e] = true
			w, _, _ := strings.Cut(e, ":")
			if e <= last[w] {
				t.Fatalf("follower %d: %s after %s", i, e, last[w])
			}
			last[w] = e
		}
	}
	if !slices.Equal(followers[0].entries, followers[1].entries) {
		t.Fatal("the followers read the log in different orders")
	}
	var replayed []string
	pos, err := c0.MirrorLog().Replay(context.Background(), func(en crawl.MirrorEntry) error {
		replayed = append(replayed, string(en.Data))
		return nil
	})
	if err != nil || pos == "" {
		t.Fatalf("replay: %q %v", pos, err)
	}
	if !slices.Equal(replayed, followers[0].entries) {
		t.Fatal("replay differs from the followers' order")
	}
	lags := slices.Clone(followers[0].lags)
	slices.Sort(lags)
	t.Logf("mirror log: %d entries from %d writers; lag from the append to a follower median %v, p99 %v, max %v (Redis's clock, 1 ms resolution)",
		len(lags), writers, lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1])
}

// A log trimmed by its cap cannot be replayed: Replay says so and gives the
// position to follow from (the worker restores its candidates from their
// stored evidence); an empty log replays nothing.
func TestMirrorLogTrimmed(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c, st := storeOn(t, srv, "t", nil)
	ctx := context.Background()
	pos, err := c.MirrorLog().Replay(ctx, func(crawl.MirrorEntry) error { return errors.New("no entry expected") })
	if pos != "" || err != nil {
		t.Fatalf("empty log: %q %v", pos, err)
	}
	defer func(n int) { MirrorLogCap = n }(MirrorLogCap)
	MirrorLogCap = 10
	for i := range 500 {
		if err := st.Update(ctx, func(tx crawl.Tx) error {
			return tx.(crawl.MirrorAppender).AppendMirror([]byte(fmt.Sprint(i)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	pos, err = c.MirrorLog().Replay(ctx, func(crawl.MirrorEntry) error { return errors.New("no entry expected") })
	if !errors.Is(err, crawl.ErrMirrorLogTrimmed) || pos == "" {
		t.Fatalf("trimmed log: %q %v", pos, err)
	}
}
