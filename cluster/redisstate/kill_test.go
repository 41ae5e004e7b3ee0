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
	m, err := c.Join(ctx, "child", MemberOptions{TTL: 800 * time.Millisecond})
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
func TestKill9WorkerProcess(t *testing.T) {
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
	m, err := c.Join(ctx, "parent", MemberOptions{TTL: 800 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	took := waitFor(t, 5*time.Second, "the partitions of the killed worker", func() bool { return len(m.Owned()) == 4 })
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
