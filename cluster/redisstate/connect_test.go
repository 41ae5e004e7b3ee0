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
