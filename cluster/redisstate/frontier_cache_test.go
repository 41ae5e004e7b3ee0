//go:build e2e

package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestFrontierPushAndEmptyHosts: the frontier's cached host lists follow
// what the worker itself queues and empties without asking Redis again. A
// host pushed is leased next without a refresh of its partition's hosts (no
// SMEMBERS: before, every Push refreshed the partition, one round trip per
// page); a host whose last item was popped is tried once more, found empty
// and dropped, not tried again on every Next until the next refresh.
func TestFrontierPushAndEmptyHosts(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/1")); err != nil {
		t.Fatal(err)
	}
	wc := openOn(t, srv, Options{})
	cc := &roundTrips{}
	wc.Client().AddHook(cc)
	m, err := wc.Join(ctx, "w", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	f := wc.NewFrontier(m, FrontierOptions{})
	it, err := f.Next(ctx)
	if err != nil || it.Host != "a.example" {
		t.Fatalf("first lease: %+v, %v", it, err)
	}
	// Another host queued (as a commit does), then pushed.
	b := items("http://b.example/1")
	b[0].Host = "b.example"
	if _, err := c.Enqueue(ctx, c.NewIDs(), b); err != nil {
		t.Fatal(err)
	}
	smembers := cc.named("smembers")
	f.Push(b...)
	it2, err := f.Next(ctx)
	if err != nil || it2.Host != "b.example" {
		t.Fatalf("lease after the push: %+v, %v", it2, err)
	}
	if n := cc.named("smembers") - smembers; n != 0 {
		t.Errorf("the pushed host cost %d SMEMBERS (a refresh of the host lists)", n)
	}
	// Both queues are empty now; both hosts are busy until released.
	pops := cc.named("evalsha :hf")
	f.Release(it, frontier.Outcome{Requested: true, Status: 200})
	f.Release(it2, frontier.Outcome{Requested: true, Status: 200})
	wctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond) // within the lists' 500 ms
	defer cancel()
	if got, err := f.Next(wctx); err == nil {
		t.Fatalf("leased %s from empty queues", got.URL)
	}
	if n := cc.named("evalsha :hf") - pops; n != 2 {
		t.Errorf("%d pops in 400 ms on two empty hosts, want 2 (one each, then dropped)", n)
	}
	f.Finish(it)
	f.Finish(it2)
}
