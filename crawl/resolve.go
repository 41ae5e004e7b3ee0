package crawl

import (
	"context"
	"net"
	"sync"
	"time"
)

// Resolver looks up a host name's addresses; *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Defaults of the politeness lookups.
const (
	DefaultMaxLookups    = 16              // concurrent DNS lookups, crawl-wide (Build)
	DefaultLookupTimeout = 5 * time.Second // one lookup
)

// lookupQueue holds the host names waiting for the lookup that groups them
// by IP (politeKey). A pool of MaxLookups goroutines, started by Run with the
// crawl's context, drains it: a page linking 3,000 host names costs at most
// MaxLookups lookups at a time, and stopping the crawl cancels them.
type lookupQueue struct {
	mu      sync.Mutex
	pending []string
	wake    chan struct{} // one token: work may be waiting
}

func (q *lookupQueue) push(host string) {
	q.mu.Lock()
	q.pending = append(q.pending, host)
	q.mu.Unlock()
	q.signal()
}

func (q *lookupQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the next host, waking another worker when more are waiting.
func (q *lookupQueue) take() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return "", false
	}
	h := q.pending[0]
	q.pending[0] = ""
	q.pending = q.pending[1:]
	if len(q.pending) > 0 {
		q.signal()
	}
	return h, true
}

// drain empties the queue and returns what it held.
func (q *lookupQueue) drain() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

// startLookups starts the lookup pool under ctx. stop waits for the pool to
// end (ctx must be cancelled first) and gives the hosts still waiting a clock
// of their own, so that none is held forever.
func (e *Engine) startLookups(ctx context.Context) (stop func()) {
	n := e.o.MaxLookups
	if n <= 0 {
		n = DefaultMaxLookups
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if host, ok := e.lq.take(); ok {
					e.lookup(ctx, host)
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-e.lq.wake:
				}
			}
		}()
	}
	e.lq.signal() // hosts queued before Run (seeds, resumed queues)
	return func() {
		wg.Wait()
		for _, h := range e.lq.drain() {
			e.fr.SetPoliteKey(h, h)
		}
	}
}

// lookup resolves host and groups it with the hosts of its first address; a
// host whose lookup fails, times out or is cancelled gets its own clock (its
// fetch then fails with the DNS error, or is not made).
func (e *Engine) lookup(ctx context.Context, host string) {
	h := hostOnly(host)
	key := host
	if ctx.Err() == nil {
		timeout := e.o.LookupTimeout
		if timeout <= 0 {
			timeout = DefaultLookupTimeout
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		addrs, err := e.resolver().LookupIPAddr(lctx, h)
		cancel()
		if err == nil && len(addrs) > 0 {
			key = "ip:" + addrs[0].IP.String()
		}
	}
	e.fr.SetPoliteKey(host, key)
}

func (e *Engine) resolver() Resolver {
	if e.o.Resolver != nil {
		return e.o.Resolver
	}
	return net.DefaultResolver
}
