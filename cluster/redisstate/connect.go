package redisstate

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Connect opens a client for a Redis URL and checks that the server answers:
// redis://[:PASSWORD@]HOST:PORT/DB, rediss:// for TLS (the server's
// certificate checked against roots, or the system's when roots is nil), and
// a Cluster as redis://HOST:PORT?addr=HOST2:PORT2&addr=... (go-redis's
// ParseClusterURL). The password is never in an error message.
//
// A command's context bounds its network calls (ContextTimeoutEnabled): a
// Redis that hangs (stopped, overloaded) costs a caller no more than its
// context's deadline, not the read timeout times the retries. The read and
// write timeouts stay go-redis's (3 s, or the URL's read_timeout and
// write_timeout): longer than any of the crawl's scripts; a blocking command
// sent alone has its block added to the read timeout by go-redis, and one
// sent in a pipeline blocks for less than it (Crawl.maxBlock).
func Connect(ctx context.Context, rawURL string, roots *tls.Config) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %s", redactErr(err, rawURL))
	}
	var rdb redis.UniversalClient
	if u.Query().Has("addr") {
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL %s: %s", redact(u), redactErr(err, rawURL))
		}
		o.TLSConfig = withRoots(o.TLSConfig, roots)
		o.ContextTimeoutEnabled = true
		rdb = redis.NewClusterClient(o)
	} else {
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL %s: %s", redact(u), redactErr(err, rawURL))
		}
		o.TLSConfig = withRoots(o.TLSConfig, roots)
		o.ContextTimeoutEnabled = true
		rdb = redis.NewClient(o)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH") {
			return nil, fmt.Errorf("redis %s: authentication failed (the URL's password): %s", redact(u), redactErr(err, rawURL))
		}
		return nil, fmt.Errorf("redis %s: %s", redact(u), redactErr(wrap("connect", err), rawURL))
	}
	return rdb, nil
}

// withRoots sets the root CAs of a TLS configuration (nil: plain TCP).
func withRoots(c, roots *tls.Config) *tls.Config {
	if c == nil || roots == nil {
		return c
	}
	c.RootCAs = roots.RootCAs
	c.Certificates = roots.Certificates
	return c
}

// redact is u without its password.
func redact(u *url.URL) string { return u.Redacted() }

// redactErr is err's message with the URL's password replaced.
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
}
