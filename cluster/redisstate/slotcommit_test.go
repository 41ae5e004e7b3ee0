//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// clusterStore opens crawl name on a Cluster of three masters and a Store
// over a fresh data dir.
func clusterStore(t *testing.T, name string, h *roundTrips) (*Crawl, *Store) {
	t.Helper()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	if h != nil {
		rdb.AddHook(h)
	}
	c, err := Open(context.Background(), rdb, name, Options{Partitions: 16, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return c, mustStore(t, c, db, nil)
}

// twoPartitionHosts returns two hosts of different partitions.
func twoPartitionHosts(c *Crawl) (string, string) {
	a := "a.example"
	for i := 0; ; i++ {
		b := fmt.Sprintf("b%d.example", i)
		if c.PartitionOf(b) != c.PartitionOf(a) {
			return a, b
		}
	}
}

// slotTx buffers, as one page's transaction would: the take of an evidence
// record, and two links on two partitions marked and queued.
func slotTx(t *testing.T, st *Store, u1, u2 string) *seamTx {
	t.Helper()
	tx := &seamTx{s: st, ctx: context.Background(), over: map[hkey]*string{}}
	if v, ok, err := tx.TakeEvidence("m", "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("take: %q %v %v", v, ok, err)
	}
	for _, u := range []string{u1, u2} {
		id, isNew, err := tx.CheckAndMark(u, tx.NewID)
		if err != nil || !isNew {
			t.Fatalf("mark %s: %v %v", u, isNew, err)
		}
		if err := tx.PutQueue(frontier.Item{URL: u, ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

func queued(t *testing.T, c *Crawl, host string) []string {
	t.Helper()
	v, err := c.rdb.LRange(context.Background(), c.queueKey(c.PartitionOf(host), host), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A commit on a Cluster whose check fails in a group after other groups
// applied: the marks applied stand (this worker's own, queued once, by it),
// nothing of the later steps is written (the evidence is not taken), and
// fn's rerun finds both; a conflict caught by the first check writes
// nothing.
func TestSlotCommitConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := clusterStore(t, "s", nil)
	ev := c.evidenceKey("m")
	if err := c.rdb.HSet(ctx, ev, "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	hA, hB := twoPartitionHosts(c)
	u1, u2 := "http://"+hA+"/1", "http://"+hB+"/2"

	// Caught by the check of every group first: nothing written.
	tx := slotTx(t, st, u1, u2)
	if _, err := c.Enqueue(ctx, c.NewIDs(), []frontier.Item{{URL: u2}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.commitSlots(); !errors.Is(err, errConflict) {
		t.Fatalf("commit after another worker marked %s: %v", u2, err)
	}
	if _, seen, _ := (&seamTx{s: st, ctx: ctx, over: map[hkey]*string{}}).SeenID(u1); seen {
		t.Errorf("%s marked by a commit that failed its first check", u1)
	}
	if v, _ := c.rdb.HGet(ctx, ev, "k").Result(); v != "v" {
		t.Errorf("evidence %q after a commit that failed its first check", v)
	}

	// Missed by the first check (another worker marks u3 between it and
	// the group of u3): u1's group applied, u3's did not, nor anything
	// after (the evidence is not taken).
	u3 := "http://" + hB + "/3"
	tx = slotTx(t, st, u1, u3)
	tx.put('E', c.inflightKey(c.PartitionOf(hB)), "raw", "1")
	tx.slots = newSlotCommit(tx.ops)
	tx.slots.next = stepLinks // the first check passed
	if _, err := c.Enqueue(ctx, c.NewIDs(), []frontier.Item{{URL: u3}}); err != nil {
		t.Fatal(err)
	}
	id1, _, _ := tx.SeenID(u1)
	if err := tx.commitSlots(); !errors.Is(err, errConflict) {
		t.Fatalf("commit after another worker marked %s: %v", u3, err)
	}
	if v, _ := c.rdb.HGet(ctx, ev, "k").Result(); v != "v" {
		t.Errorf("evidence %q after the commit failed in the links' step: taken", v)
	}
	if q := queued(t, c, hA); len(q) != 1 || !strings.Contains(q[0], u1) {
		t.Errorf("queue of %s: %q, want %s once", hA, q, u1)
	}
	if q := queued(t, c, hB); len(q) != 2 { // u2 and u3, by the other worker
		t.Errorf("queue of %s: %q, want %s and %s once each", hB, q, u2, u3)
	}
	// fn's rerun: u1 seen under the id this worker gave it, u3 seen, the
	// evidence there to take; nothing left to queue.
	re := &seamTx{s: st, ctx: ctx, over: map[hkey]*string{}}
	if id, seen, err := re.SeenID(u1); err != nil || !seen || id != id1 {
		t.Errorf("rerun: %s seen %v id %d (want %d) %v", u1, seen, id, id1, err)
	}
	if _, isNew, err := re.CheckAndMark(u3, re.NewID); err != nil || isNew {
		t.Errorf("rerun: %s new %v %v", u3, isNew, err)
	}
	if _, ok, err := re.TakeEvidence("m", "k"); err != nil || !ok {
		t.Errorf("rerun: evidence there %v %v", ok, err)
	}
	if err := re.commitSlots(); err != nil {
		t.Fatalf("rerun's commit: %v", err)
	}
	if n, _ := c.rdb.HLen(ctx, ev).Result(); n != 0 {
		t.Errorf("evidence not taken by the rerun")
	}
}

// The steps of a cluster commit: links first (its own partition's too), then
// the evidence taken, then the other writes, the end of the lease last and
// alone.
func TestSlotCommitOrder(t *testing.T) {
	t.Parallel()
	ops := []txOp{
		{code: 'E', key: "hs:{c/p1}:f", field: "raw", value: "1"},
		{code: 'N', key: "hs:{c/p1}:s:0", field: "x", value: "1"},
		{code: 'H', key: "hs:{c/g}:0", field: "1", value: "{}"},
		{code: 'N', key: "hs:{c/p2}:s:0", field: "y", value: "2"},
		{code: 'R', key: "hs:{c/p2}:q:h", value: "it"},
		{code: 'T', key: "hs:{c/e}:m", field: "k", value: "v"},
		{code: 'H', key: "hs:{c/p3}:k", field: "u", value: "{}"},
		{code: 'G', key: "hs:{c/e2}:c", field: "k", value: "v"},
		{code: 'H', key: "hs:{c/e2}:c", field: "k", value: "w"},
		{code: 'A', key: "hs:{c/e3}:alias", field: "k"},
		{code: 'T', key: "hs:{c/g2}:0", field: "5", value: "old"},
	}
	sc := newSlotCommit(ops)
	want := [][]string{nil, {"c/p1", "c/p2", "c/e3"}, {"c/e", "c/g2", "c/e2"}, {"c/g", "c/p3"}, {"c/p1"}}
	for i, step := range sc.steps {
		var tags []string
		for _, g := range step {
			tags = append(tags, hashTag(g.keys[0]))
		}
		if fmt.Sprint(tags) != fmt.Sprint(want[i]) {
			t.Errorf("step %d: %v, want %v", i, tags, want[i])
		}
	}
	if hashTag("hs:{c/p1}:f") != "c/p1" || hashTag("plain") != "plain" || hashTag("a{}b") != "a{}b" {
		t.Error("hashTag")
	}
}

// On a Cluster a page's transaction costs four round trips (its links' marks,
// skip records and alias hints read in one pipeline, the check of the
// commit, the links' groups with the hints' checks, the page's record),
// whether it has 1 link or 200 on many nodes.
func TestSlotCommitRoundTrips(t *testing.T) {
	t.Parallel()
	h := &roundTrips{}
	_, s := clusterStore(t, "rt", h)
	pageTx(t, s, 1, linksOf("warm", 1))
	for _, n := range []int{1, 20, 200} {
		h.reset()
		if q := pageTx(t, s, uint64(10+n), linksOf(fmt.Sprint(n), n)); len(q) != n {
			t.Fatalf("%d links: %d queued", n, len(q))
		}
		if got := h.get(); got != 4 {
			t.Errorf("a page with %d links: %d round trips, want 4", n, got)
		}
	}
}

// TestSlotCommitMarkRace: TestStoreMarkRace on a Cluster: a URL another
// worker marks between this transaction's read and its commit is not
// queued twice: the commit's check fails, the transaction runs again and
// finds it marked.
func TestSlotCommitMarkRace(t *testing.T) {
	t.Parallel()
	c, a := clusterStore(t, "race", nil)
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := mustStore(t, c, db, nil)
	const u, v = "http://r.test/x", "http://other.test/y"
	runs := 0
	var aFresh bool
	err = a.Update(context.Background(), func(tx crawl.Tx) error {
		runs++
		if err := tx.(crawl.SeenPrefetcher).PrefetchSeen([]string{u, v}); err != nil {
			return err
		}
		if runs == 1 {
			if q := pageTx(t, b, 5, []string{u}); len(q) != 1 {
				t.Errorf("worker b: %v queued", q)
			}
		}
		var err error
		if _, aFresh, err = tx.CheckAndMark(u, tx.NewID); err != nil {
			return err
		}
		_, _, err = tx.CheckAndMark(v, tx.NewID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || aFresh {
		t.Fatalf("worker a: %d runs, fresh %v; want 2 runs, the URL found marked", runs, aFresh)
	}
}

// EnsureServerConfig through a Cluster client sets every master (CONFIG is
// per node: through the client it would reach one).
func TestEnsureServerConfigCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	if changed, err := EnsureServerConfig(ctx, cl.Client(t)); err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	for _, s := range cl.Servers {
		v, err := s.Client(t).ConfigGet(ctx, "hash-max-listpack-value").Result()
		if err != nil || v["hash-max-listpack-value"] != "128" {
			t.Errorf("node %s: hash-max-listpack-value %v %v", s.Addr, v, err)
		}
	}
}

// A worker that dies between the steps of a page's commit on a Cluster
// (here: after its links' groups, its evidence and its record, before the
// end of its lease) leaves the item in flight, its links seen and queued once: the
// page's refetch finds them seen and queues nothing again (docs/SEAMS.md).
func TestSlotCommitCrashBetweenSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := clusterStore(t, "crash", nil)
	hA, hB := twoPartitionHosts(c)
	page := "http://" + hA + "/page"
	if _, err := c.Enqueue(ctx, c.NewIDs(), []frontier.Item{{URL: page}}); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	it, raw, ok, err := m.Pop(ctx, hA)
	if err != nil || !ok {
		t.Fatalf("pop: %v %v", ok, err)
	}
	links := []string{"http://" + hA + "/a", "http://" + hB + "/b"}
	tx := &seamTx{s: st, ctx: ctx, over: map[hkey]*string{}}
	for _, u := range links {
		id, _, err := tx.CheckAndMark(u, tx.NewID)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.PutQueue(frontier.Item{URL: u, ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	tx.put('H', c.recordKey(it.ID), "x", "{}")
	tx.put('E', c.inflightKey(c.PartitionOf(hA)), raw, fmt.Sprint(m.epochOf(c.PartitionOf(hA))))
	sc := newSlotCommit(tx.ops)
	if len(sc.steps[stepLease]) != 1 || len(sc.steps[stepLease][0].ops) != 1 || len(sc.steps[stepLinks]) != 2 {
		t.Fatalf("steps: %d link groups, %d lease groups", len(sc.steps[stepLinks]), len(sc.steps[stepLease]))
	}
	for _, step := range sc.steps[stepLinks:stepLease] { // then the worker dies
		if ok, _, _, err := c.applyGroups(ctx, step); err != nil || !ok {
			t.Fatalf("step: %v %v", ok, err)
		}
	}
	if n, err := c.InFlight(ctx, c.PartitionOf(hA)); err != nil || n != 1 {
		t.Fatalf("%d in flight after the crash (%v), want the page's item", n, err)
	}
	if q := queued(t, c, hB); len(q) != 1 || !strings.Contains(q[0], links[1]) {
		t.Errorf("queue of %s: %q", hB, q)
	}
	if q := queued(t, c, hA); len(q) != 1 || !strings.Contains(q[0], links[0]) {
		t.Errorf("queue of %s: %q", hA, q)
	}
	// The refetch finds both links seen.
	re := &seamTx{s: st, ctx: ctx, over: map[hkey]*string{}}
	for _, u := range links {
		if _, isNew, err := re.CheckAndMark(u, re.NewID); err != nil || isNew {
			t.Errorf("refetch: %s new %v %v", u, isNew, err)
		}
	}
}

// Two groups that take records (the evidence, a page summary) go one at a
// time; when the second's check fails, the record the first took is put
// back for fn's rerun.
func TestSlotCommitPutBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := clusterStore(t, "pb", nil)
	ev := c.evidenceKey("m")
	if err := c.rdb.HSet(ctx, ev, "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	rec := c.recordKey(5)
	if err := c.rdb.HSet(ctx, rec, "5", "old").Err(); err != nil {
		t.Fatal(err)
	}
	tx := &seamTx{s: st, ctx: ctx, over: map[hkey]*string{}}
	if _, ok, err := tx.TakeEvidence("m", "k"); err != nil || !ok {
		t.Fatalf("take: %v %v", ok, err)
	}
	tx.put('T', rec, "5", "old")
	tx.slots = newSlotCommit(tx.ops)
	tx.slots.next = stepLinks // the first check passed; then another worker:
	if err := c.rdb.HSet(ctx, rec, "5", "changed").Err(); err != nil {
		t.Fatal(err)
	}
	if err := tx.commitSlots(); !errors.Is(err, errConflict) {
		t.Fatalf("commit: %v", err)
	}
	if v, _ := c.rdb.HGet(ctx, ev, "k").Result(); v != "v" {
		t.Errorf("evidence %q after the second take failed: not put back", v)
	}
	if v, _ := c.rdb.HGet(ctx, rec, "5").Result(); v != "changed" {
		t.Errorf("summary %q: the other worker's write lost", v)
	}
}

// A commit on a Cluster that writes to a partition whose keys are gone (its
// node restarted without persistence) is refused with a *LostError naming
// the partition's marker: by the first check, with nothing written; and
// when the loss comes after the first check, by the partition's group (not
// taken for a conflict, whose rerun would write the links into the lost
// partition).
func TestSlotCommitLostPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := clusterStore(t, "lost", nil)
	ev := c.evidenceKey("m")
	if err := c.rdb.HSet(ctx, ev, "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	hA, hB := twoPartitionHosts(c)
	pb := c.PartitionOf(hB)

	tx := slotTx(t, st, "http://"+hA+"/1", "http://"+hB+"/2")
	c.rdb.Del(ctx, c.genKey(pb))
	if err := tx.commitSlots(); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), c.genKey(pb)) {
		t.Fatalf("commit into a partition whose marker is gone: %v, want a lost-state error naming it", err)
	}
	if q := queued(t, c, hA); len(q) != 0 {
		t.Errorf("queue of %s %q after a commit refused by its first check", hA, q)
	}
	if v, _ := c.rdb.HGet(ctx, ev, "k").Result(); v != "v" {
		t.Errorf("evidence %q after a commit refused by its first check", v)
	}

	if err := c.markPartitions(ctx); err != nil { // the marker back
		t.Fatal(err)
	}
	tx = slotTx(t, st, "http://"+hA+"/3", "http://"+hB+"/4")
	tx.slots = newSlotCommit(append(c.markerOps(tx.ops), tx.ops...))
	tx.slots.next = stepLinks // the first check passed
	c.rdb.Del(ctx, c.genKey(pb))
	if err := tx.commitSlots(); !errors.Is(err, ErrLost) || errors.Is(err, errConflict) {
		t.Fatalf("commit into a partition lost after the first check: %v, want a lost-state error", err)
	}
}
