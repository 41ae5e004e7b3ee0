package fetch

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// RobotsOptions configures a RobotsCache. Zero fields take the defaults.
type RobotsOptions struct {
	TTL           time.Duration // cache lifetime of a 2xx/4xx result, default 24h (RFC 9309 section 2.4)
	RetryInterval time.Duration // after 5xx/429/network error the host stays disallowed; retried after this, default 1m
	MaxSize       int           // bytes parsed, default 500 KiB
	MaxRedirects  int           // default 5 (RFC 9309 section 2.3.1.2)
}

// Defaults applied by NewRobotsCache.
const (
	DefaultRobotsTTL           = 24 * time.Hour
	DefaultRobotsRetryInterval = time.Minute
	DefaultRobotsMaxRedirects  = 5
)

func (o RobotsOptions) withDefaults() RobotsOptions {
	if o.TTL <= 0 {
		o.TTL = DefaultRobotsTTL
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRobotsRetryInterval
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultRobotsMaxSize
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultRobotsMaxRedirects
	}
	return o
}

// RobotsStore persists entries so the cache survives a restart.
type RobotsStore interface {
	LoadRobots(host string) (RobotsEntry, bool, error)
	SaveRobots(host string, e RobotsEntry) error
}

// RobotsEntry is what a RobotsStore keeps per scheme+host[:port]; RobotsFromEntry rebuilds the
// rules from it.
type RobotsEntry struct {
	Status    int       // HTTP status of the last response (0 when the request failed)
	Body      []byte    // body for 2xx (at most MaxSize bytes), nil otherwise
	FetchedAt time.Time //
	Err       string    // transport failure ("class: cause"), "" when a response was received
	Incurable bool      // the failure is one retrying cannot cure soon (see Incurable)
}

// RobotsFromEntry rebuilds the rules from a stored entry: a transport failure (Err set, Status 0)
// means unavailable (disallow all); otherwise ParseRobots semantics apply.
func RobotsFromEntry(e RobotsEntry, maxSize int) *Robots {
	if e.Err != "" && e.Status == 0 {
		return &Robots{unavailable: true, cause: robotsCause(e), incurable: e.Incurable}
	}
	if maxSize <= 0 {
		maxSize = DefaultRobotsMaxSize
	}
	return parseRobots(e.Status, e.Body, maxSize)
}

// RobotsCache fetches, caches and persists robots.txt per scheme+host[:port]. It is safe for
// concurrent use; concurrent Gets for one host share a single request.
type RobotsCache struct {
	f     *Fetcher
	o     RobotsOptions
	store RobotsStore
	now   func() time.Time

	mu       sync.Mutex
	entries  map[string]robotsItem
	inflight map[string]*robotsCall
	inserts  int
}

type robotsItem struct {
	r       *Robots
	expires time.Time
}

type robotsCall struct {
	done chan struct{}
	r    *Robots
	err  error
}

// NewRobotsCache builds a cache that fetches with f. store may be nil; now nil means time.Now.
func NewRobotsCache(f *Fetcher, o RobotsOptions, store RobotsStore, now func() time.Time) *RobotsCache {
	if now == nil {
		now = time.Now
	}
	return &RobotsCache{
		f:        f,
		o:        o.withDefaults(),
		store:    store,
		now:      now,
		entries:  make(map[string]robotsItem),
		inflight: make(map[string]*robotsCall),
	}
}

// RobotsKey returns the cache key of u: lower-case scheme://host[:port], default port dropped.
func RobotsKey(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}

// Get returns the rules for u's host, fetching /robots.txt if not cached or expired. fetched
// reports whether a request was sent by this call. A network error, 429 or 5xx yields rules that
// disallow everything (Unavailable) until RetryInterval passes; err is only for ctx cancellation
// and for a request ctx's Fence stopped (errors.Is(err, ErrFenced); see WithFence): neither is
// cached, and a Get waiting on such a request makes its own.
func (c *RobotsCache) Get(ctx context.Context, u *url.URL) (r *Robots, fetched bool, err error) {
	key := RobotsKey(u)
	for {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		c.mu.Lock()
		it, cached := c.entries[key]
		if cached && c.now().Before(it.expires) {
			c.mu.Unlock()
			return it.r, false, nil
		}
		if call, ok := c.inflight[key]; ok {
			c.mu.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
			if call.err != nil {
				continue // the leading caller was canceled: try again, possibly as the leader
			}
			return call.r, false, nil
		}
		call := &robotsCall{done: make(chan struct{})}
		c.inflight[key] = call
		c.mu.Unlock()

		r, expires, fetched, err := c.load(ctx, key, !cached)

		c.mu.Lock()
		delete(c.inflight, key)
		if err == nil {
			c.entries[key] = robotsItem{r: r, expires: expires}
			c.sweepLocked()
		}
		c.mu.Unlock()
		call.r, call.err = r, err
		close(call.done)
		return r, fetched, err
	}
}

// sweepLocked drops expired entries every 1024 insertions, bounding memory to live hosts.
func (c *RobotsCache) sweepLocked() {
	c.inserts++
	if c.inserts%1024 != 0 {
		return
	}
	now := c.now()
	for k, it := range c.entries {
		if !now.Before(it.expires) {
			delete(c.entries, k)
		}
	}
}

func (c *RobotsCache) expiry(r *Robots, fetchedAt time.Time) time.Time {
	if r.Unavailable() {
		return fetchedAt.Add(c.o.RetryInterval)
	}
	return fetchedAt.Add(c.o.TTL)
}

// load consults the store (when the host is not in memory) and otherwise fetches /robots.txt.
func (c *RobotsCache) load(ctx context.Context, key string, tryStore bool) (*Robots, time.Time, bool, error) {
	log := c.f.log.With(LogKeyHost, key)
	if tryStore && c.store != nil {
		e, ok, err := c.store.LoadRobots(key)
		switch {
		case err != nil:
			log.Warn("robots: load from store", LogKeyErr, err)
		case ok:
			r := RobotsFromEntry(e, c.o.MaxSize)
			if exp := c.expiry(r, e.FetchedAt); c.now().Before(exp) {
				return r, exp, false, nil
			}
		}
	}

	fetchedAt := c.now()
	res, lastStatus, err := c.f.do(ctx, key+"/robots.txt", limits{maxRedirects: c.o.MaxRedirects, maxBody: int64(c.o.MaxSize), revisit: true}, Validators{})
	var e RobotsEntry
	var fe *Error
	switch {
	case err == nil || (errors.As(err, &fe) && fe.Class == ClassTooLarge && res != nil):
		// An oversized file is parsed up to MaxSize, as RFC 9309 section 2.5 allows.
		e = RobotsEntry{Status: res.Status}
		if res.Status >= 200 && res.Status < 300 {
			e.Body = res.RawBody
		}
	case ctx.Err() != nil:
		return nil, time.Time{}, true, ctx.Err()
	case errors.Is(err, ErrFenced):
		// Not sent: nothing learned, nothing cached or saved.
		return nil, time.Time{}, false, err
	case errors.As(err, &fe) && (fe.Class == ClassRedirect || fe.Class == ClassScheme):
		// More than MaxRedirects redirects (or a redirect off http/https): RFC 9309 section 2.3.1.2
		// lets the crawler treat the file as unavailable, i.e. like a 4xx (allow all).
		// Status is the last 3xx seen; Err only documents why the chain was not followed.
		e = RobotsEntry{Status: lastStatus, Err: err.Error()}
	default:
		e = RobotsEntry{Err: err.Error(), Incurable: Incurable(err)}
		if errors.As(err, &fe) {
			cause := fe.Err
			if ue := (*url.Error)(nil); errors.As(cause, &ue) {
				cause = ue.Err // without `Get "http://host/robots.txt": `
			}
			e.Err = fe.Class + ": " + cause.Error()
		}
	}
	e.FetchedAt = fetchedAt
	r := RobotsFromEntry(e, c.o.MaxSize)
	log.Debug("robots fetched", LogKeyStatus, e.Status, LogKeyErr, e.Err)
	if c.store != nil {
		if err := c.store.SaveRobots(key, e); err != nil {
			log.Warn("robots: save to store", LogKeyErr, err)
		}
	}
	return r, c.expiry(r, fetchedAt), true, nil
}
