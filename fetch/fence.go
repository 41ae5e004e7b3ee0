package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
)

// A Fence is asked, once the connection a request will go out on is
// obtained and right before the request is written to it, whether the
// request may still be sent: an error stops it with nothing written. A shared
// crawl's engine passes one that checks the lease of the URL's partition
// (fetch/ knows nothing of leases), so that the time spent resolving the name,
// connecting, doing the TLS handshake or a proxy's CONNECT, all before that
// point, is no longer part of the window between the lease check and the
// request. ctx is the fetch's.
type Fence func(ctx context.Context) error

// ErrFenced is the cause of a fetch its Fence stopped (class "fenced"): no
// byte of the request was written.
var ErrFenced = errors.New("request not written")

type fenceKey struct{}

// WithFence returns ctx whose fetches (redirects and robots.txt included)
// ask fence before each request is written. The request's connection is
// closed when fence fails: a connection handed to a request is written to
// by the transport whatever the request's context says, and a closed one
// cannot be.
func WithFence(ctx context.Context, fence Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

func fenceOf(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}

// fenceTrace asks fence when the transport hands a request its connection
// (httptrace's GotConn: net/http calls it on the request's goroutine after
// the dial and before the request is queued for writing, for HTTP/1 and
// HTTP/2 alike). On an error it records it in st, closes the connection
// and cancels the request (cancel), so that the transport neither writes
// nor retries it.
func (st *reqState) fenceTrace(ctx context.Context, fence Fence, cancel context.CancelCauseFunc) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			st.fenceAsk(ctx, fence, cancel, func() {
				if info.Conn != nil {
					info.Conn.Close()
				}
			})
		},
	}
}

// fenceAsk asks fence (once fenced, a retry of the same fetch is not asked
// again: it fails the same way).
func (st *reqState) fenceAsk(ctx context.Context, fence Fence, cancel context.CancelCauseFunc, stop func()) {
	st.mu.Lock()
	fenced := st.fenced
	st.mu.Unlock()
	err := fenced
	if err == nil {
		err = fence(ctx)
	}
	if err == nil {
		return
	}
	stop()
	st.mu.Lock()
	st.fenced = err
	st.mu.Unlock()
	cancel(ErrFenced)
}

// tracesConn reports whether t reports GotConn (net/http's transports do);
// another RoundTripper is asked its fence right before RoundTrip instead.
func tracesConn(t http.RoundTripper) bool {
	_, ok := t.(*http.Transport)
	return ok
}
