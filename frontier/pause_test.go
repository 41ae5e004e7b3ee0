//go:build go1.25

package frontier

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// nextAsync runs Next in a goroutine and returns where its result arrives.
func nextAsync(ctx context.Context, f *Frontier) <-chan *Item {
	ch := make(chan *Item, 1)
	go func() {
		it, err := f.Next(ctx)
		if err != nil {
			it = &Item{URL: "error: " + err.Error()}
		}
		ch <- it
	}()
	return ch
}

// TestPauseHoldsLeases: a worker already waiting in Next for a host's
// politeness delay leases nothing while the frontier is paused, however long
// the pause; a paused frontier with nothing queued and nothing in flight does
// not end the crawl; Resume lets the waiting worker lease at once.
func TestPauseHoldsLeases(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore()
		f, err := New(Options{Delay: time.Second}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(f, s, "a", "a1", "a2")
		ctx := context.Background()
		it, err := f.Next(ctx)
		if err != nil || it.URL != "a1" {
			t.Fatalf("first lease: %v %v", it, err)
		}
		f.Release(it, Outcome{Requested: true, Status: 200})
		s.del(it)
		f.Finish(it)
		got := nextAsync(ctx, f) // waits for a's delay
		synctest.Wait()
		f.Pause()
		if !f.Paused() {
			t.Fatal("Paused() false after Pause")
		}
		time.Sleep(time.Hour) // far past the delay
		synctest.Wait()
		select {
		case it := <-got:
			t.Fatalf("leased %q while paused", it.URL)
		default:
		}
		start := time.Now()
		f.Resume()
		it = <-got
		if it.URL != "a2" || time.Since(start) != 0 {
			t.Fatalf("after Resume: leased %q after %v, want a2 at once", it.URL, time.Since(start))
		}
		f.Release(it, Outcome{Requested: true, Status: 200})
		s.del(it)
		f.Finish(it)

		// Nothing queued, nothing in flight: paused, Next waits (seeds may
		// still be added); resumed, the crawl is done.
		f.Pause()
		got = nextAsync(ctx, f)
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case it := <-got:
			t.Fatalf("paused empty frontier returned %q", it.URL)
		default:
		}
		enqueue(f, s, "b", "b1")
		synctest.Wait()
		select {
		case it := <-got:
			t.Fatalf("leased %q pushed while paused", it.URL)
		default:
		}
		f.Resume()
		if it := <-got; it.URL != "b1" {
			t.Fatalf("after Resume: %q, want b1", it.URL)
		}
	})
}

// TestPauseEndsOnStopAndCancel: a worker paused in Next returns ErrDone on
// Stop, and its context's error when the context ends (a clean stop of a
// paused crawl).
func TestPauseEndsOnStopAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore()
		f, err := New(Options{}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(f, s, "a", "a1")
		f.Pause()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := f.Next(ctx); done <- err }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled while paused: %v", err)
		}
		go func() { _, err := f.Next(context.Background()); done <- err }()
		synctest.Wait()
		f.Stop()
		if err := <-done; !errors.Is(err, ErrDone) {
			t.Fatalf("stopped while paused: %v", err)
		}
	})
}
