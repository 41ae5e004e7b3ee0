//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// The same operations against a Redis Cluster of three masters: the hash
// tags keep every script's keys in one slot (Redis refuses a script whose
// keys span slots: CROSSSLOT), and the partitions spread over the nodes.
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	rdb := cl.Client(t)
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		_, err := EnsureServerConfig(ctx, c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, rdb, "t", Options{Partitions: 16, Capacity: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	ids := c.NewIDs()
	var its []frontier.Item
	for i := 0; i < 300; i++ {
		its = append(its, frontier.Item{URL: fmt.Sprintf("http://h%d.example/%d", i%40, i), Depth: 1})
	}
	added, err := c.Enqueue(ctx, ids, its)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range added {
		if !a {
			t.Fatalf("%s not added", its[i].URL)
		}
	}
	if added, err = c.Enqueue(ctx, ids, its[:10]); err != nil || added[0] {
		t.Fatalf("again: %v %v", added, err)
	}
	// Which shards (a primary and its replicas) hold partitions: more than one.
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	held := map[int]bool{}
	for p := 0; p < 16; p++ {
		slot, err := rdb.ClusterKeySlot(ctx, c.hostsKey(p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, sh := range shards {
			for _, r := range sh.Slots {
				if slot >= r.Start && slot <= r.End {
					held[i] = true
				}
			}
		}
	}
	if len(held) < 2 {
		t.Fatalf("16 partitions on %d shard(s)", len(held))
	}
	// A lease only a hang outlasts: one late heartbeat (past 2/3 of a 2 s
	// TTL) made the pop below stale.
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	if len(m.Owned()) != 16 {
		t.Fatalf("holds %d partitions", len(m.Owned()))
	}
	it, raw, ok, err := m.Pop(ctx, "h3.example")
	if err != nil || !ok {
		t.Fatalf("pop: %v %v", ok, err)
	}
	links := []frontier.Item{{URL: "http://h3.example/new", Depth: 2}, {URL: "http://h7.example/new", Depth: 2}, {URL: it.URL}}
	added, err = c.Commit(ctx, m, ids, &it, raw, links)
	if err != nil || !added[0] || !added[1] || added[2] {
		t.Fatalf("commit: %v %v", added, err)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("h3.example")); n != 0 {
		t.Fatalf("%d in flight after the commit", n)
	}
	pg := page(it.ID, 42, 6)
	if r, err := c.CheckAndAdd(ctx, pg, nil, DedupOptions{}); err != nil || !r.Added {
		t.Fatalf("check-and-add: %+v %v", r, err)
	}
	cp := page(it.ID+1, 42, 6)
	if r, err := c.CheckAndAdd(ctx, cp, nil, DedupOptions{}); err != nil || r.Exact != it.ID {
		t.Fatalf("check-and-add of a copy: %+v %v", r, err)
	}
	res, _, _, err := c.ReserveIP(ctx, "10.1.2.3", "w", time.Second)
	if err != nil || res == nil {
		t.Fatalf("reserve: %v", err)
	}
	if err := c.ReleaseIP(ctx, res, time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
