//go:build e2e

package redisstate

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestMain lets the test binary run as a worker process (killWorker).
//
// The package's tests run in parallel: each starts a redis-server of its
// own (or needs none), and most of their time is spent waiting on leases,
// timeouts and restarts. Serial are TestMirrorLogTrimmed, which sets
// MirrorLogCap (the serial tests end before a parallel one starts), and the
// memory measurements TestBandKeysMemory and TestMemoryPerItem.
func TestMain(m *testing.M) {
	if addr := os.Getenv("REDISSTATE_TEST_WORKER"); addr != "" {
		killWorker(addr)
		return
	}
	if addr := os.Getenv("REDISSTATE_TEST_KEEPER"); addr != "" {
		keeperProcess(addr, os.Getenv("REDISSTATE_TEST_DIR"))
		return
	}
	os.Exit(m.Run())
}

// killWorker joins crawl "t" at addr, pops one item of a.example, prints it
// and waits to be killed, its fetch never finished.
func killWorker(addr string) {
	ctx := context.Background()
	c, err := Open(ctx, redis.NewClient(&redis.Options{Addr: addr}), "t", Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// A lease only a hang outlasts: a stall between the join and the pop
	// (a TTL of 800 ms ran out under load) must not fail the pop; the test
	// expires it once the process is killed (expireWorker).
	m, err := c.Join(ctx, "child", MemberOptions{TTL: time.Minute})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	it, _, ok, err := m.Pop(ctx, "a.example")
	if err != nil || !ok {
		fmt.Println("error", ok, err)
		os.Exit(1)
	}
	fmt.Println("popped", it.URL)
	time.Sleep(time.Minute)
}

// A worker process killed with SIGKILL in the middle of a fetch: its item
// is in flight in Redis, and the worker that takes its partitions after the
// lease runs out puts it back; nothing is lost, nothing is queued twice.
//
// Not on the wall clock: both workers hold their leases a minute (a stall
// of the surviving worker past a short TTL would lose its lease under a pop)
// and the test makes the killed worker's run out (expireWorker), as its TTL
// would, once the process is dead.
func TestKill9WorkerProcess(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 4, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://b.example/1"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REDISSTATE_TEST_WORKER="+srv.Addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "popped http://a.example/1") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("worker said %q", line)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 1 {
		t.Fatalf("%d in flight before the kill", n)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if n, err := c.rdb.Exists(ctx, c.leaseKey(c.PartitionOf("a.example"))).Result(); n != 1 || err != nil {
		t.Fatalf("the killed worker's lease is gone before it ran out (%v)", err)
	}
	expireWorker(t, c, "child") // its TTL runs out
	m, err := c.Join(ctx, "parent", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	took := waitFor(t, hangBound, "the partitions of the killed worker", func() bool { return len(m.Owned()) == 4 })
	t.Logf("taken over %v after the kill", took)
	var got []string
	for _, h := range []string{"a.example", "b.example"} {
		for {
			it, raw, ok, err := m.Pop(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, it.URL)
			if err := m.Done(ctx, h, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(urls, " ") {
		t.Fatalf("after the takeover the queues gave %v, want %v", got, urls)
	}
}

// expireWorker does to dead worker id's keys, at once, what their TTLs do:
// the leases it still holds go, and its heartbeat in the workers set is
// past (the next heartbeat of another worker drops it, and the live count
// with it). Tests whose surviving workers hold leases a minute make a
// killed worker's run out with it, not by waiting on the wall clock.
func expireWorker(t testing.TB, c *Crawl, id string) {
	t.Helper()
	ctx := context.Background()
	for p := 0; p < c.partitions; p++ {
		if err := expireLeaseScript.Run(ctx, c.rdb, []string{c.leaseKey(p)}, id+" ").Err(); err != nil {
			t.Errorf("expiring %s's lease of partition %d: %v", id, p, err)
		}
	}
	if err := c.rdb.ZAddXX(ctx, c.workersKey(), redis.Z{Score: 0, Member: id}).Err(); err != nil {
		t.Errorf("expiring %s's heartbeat: %v", id, err)
	}
}

// expireLeaseScript deletes a lease held by the worker ARGV[1] ("id ").
var expireLeaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
