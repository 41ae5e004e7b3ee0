//go:build e2e

package redisstate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// A crawl over a server that requires a password and speaks only TLS, by
// its rediss:// URL; a wrong password and an untrusted certificate are clear
// errors that do not show the password.
func TestConnectPasswordTLS(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	srv := redistest.Start(t, redistest.Options{Password: secret, TLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !strings.HasPrefix(srv.URL(), "rediss://:"+secret+"@127.0.0.1:") {
		t.Fatalf("URL %s", srv.URL())
	}
	rdb, err := Connect(ctx, srv.URL(), srv.TLS)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c, err := Open(ctx, rdb, "tls", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if added, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/")); err != nil || !added[0] {
		t.Fatalf("enqueue over TLS: %v %v", added, err)
	}
	wrong := strings.Replace(srv.URL(), secret, "not-it", 1)
	_, err = Connect(ctx, wrong, srv.TLS)
	if err == nil || !strings.Contains(err.Error(), "authentication failed") || strings.Contains(err.Error(), "not-it") {
		t.Fatalf("a wrong password: %v", err)
	}
	_, err = Connect(ctx, srv.URL(), nil) // the system's roots do not know the certificate
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("an untrusted certificate: %v", err)
	}
	t.Logf("untrusted: %v", err)
	plain := strings.Replace(srv.URL(), "rediss://", "redis://", 1)
	if _, err := Connect(ctx, plain, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("plain TCP to a TLS port: %v", err)
	}
}

// A hung Redis (its process stopped with SIGSTOP: connections open, no
// answer) costs a command no more than its context's deadline: a worker's
// deadlines hold. Without ContextTimeoutEnabled the command waits for the
// read timeout and its retries.
//
// Not on the wall clock: the read timeout is a minute here (the default is
// 3 s), so a command that waited for it, not its context's 200 ms, takes a
// minute at least, which only a hang reaches otherwise (it checked the
// command took under 1 s).
func TestHungRedisBoundedByContext(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	const readTimeout = time.Minute
	rdb, err := Connect(ctx, srv.URL()+"?read_timeout="+readTimeout.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	c, err := Open(ctx, rdb, "hung", Options{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	for _, call := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"GET", func(ctx context.Context) error { return rdb.Get(ctx, "k").Err() }},
		{"a script (enqueue)", func(ctx context.Context) error {
			_, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/"))
			return err
		}},
		{"a pipeline (queued count)", func(ctx context.Context) error { _, err := c.QueuedAll(ctx); return err }},
	} {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		err := call.do(cctx)
		took := time.Since(start)
		cancel()
		t.Logf("%s against a hung Redis: %v after %v", call.name, err, took)
		if err == nil || took >= readTimeout {
			t.Errorf("%s with a 200 ms context against a hung Redis: %v after %v (read timeout %v)", call.name, err, took, readTimeout)
		}
	}
	srv.Thaw()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("after the server resumed: %v", err)
	}
}
