//go:build go1.25

package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"testing/synctest"
)

// heldResolver holds every lookup until ctx ends, counting those in flight and their peak.
type heldResolver struct {
	mu             sync.Mutex
	inflight, peak int
}

func (r *heldResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	r.inflight++
	r.peak = max(r.peak, r.inflight)
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	r.inflight--
	r.mu.Unlock()
	return nil, &net.DNSError{Err: ctx.Err().Error(), Name: host, UnwrapErr: ctx.Err()}
}

// TestLimitLookups: at most n lookups reach the resolver at once, however many are asked, and
// one waiting for a slot ends when its context does, with a DNS error that unwraps to the
// context's.
func TestLimitLookups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &heldResolver{}
		r := LimitLookups(inner, 3)
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 10)
		for i := range 10 {
			go func() {
				_, err := r.LookupIPAddr(ctx, fmt.Sprintf("h%d.test", i))
				errs <- err
			}()
		}
		synctest.Wait() // every lookup that may start has started
		inner.mu.Lock()
		if inner.inflight != 3 || inner.peak != 3 {
			t.Errorf("%d lookups in flight (peak %d), want 3", inner.inflight, inner.peak)
		}
		inner.mu.Unlock()
		cancel()
		for range 10 {
			var de *net.DNSError
			if err := <-errs; !errors.As(err, &de) || !errors.Is(err, context.Canceled) {
				t.Errorf("lookup ended with %v, want a DNS error unwrapping to context.Canceled", err)
			}
		}
	})
}
