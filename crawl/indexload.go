package crawl

import (
	"context"
	"fmt"
	"sync"

	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// indexLoad is the rebuild of the duplicate index from the stored
// signatures on resume (Restore), run beside the crawl's first requests
// (issue 30: at a million pages it read every signature before the first
// request). Every use of the index waits for it (indexReady), so each
// decision is made against the whole index, as when the rebuild came first.
type indexLoad struct {
	mu     sync.Mutex
	done   chan struct{} // closed when the load ended; nil before Restore
	cancel context.CancelFunc
	n      int
	err    error
}

// startIndexLoad reads the stored signatures into the index in a goroutine.
func (e *Engine) startIndexLoad() {
	ctx, cancel := context.WithCancel(e.sctx)
	done := make(chan struct{})
	l := &e.load
	l.mu.Lock()
	l.done, l.cancel = done, cancel
	l.mu.Unlock()
	go func() {
		defer close(done)
		n := 0
		err := e.st.ForEachSignature(ctx, func(id uint64, b []byte) error {
			var s dedup.Signature
			if err := s.UnmarshalBinary(b); err != nil {
				return fmt.Errorf("signature of page %d: %w", id, err)
			}
			n++
			return e.index.Add(ctx, id, &s)
		})
		if err != nil {
			err = fmt.Errorf("cannot rebuild the duplicate index: %w", err)
		} else if n > 0 {
			e.logger.Info("duplicate index rebuilt", "pages", n)
		}
		l.mu.Lock()
		l.n, l.err = n, err
		l.mu.Unlock()
	}()
}

// indexReady waits for the rebuild of the duplicate index, if one was
// started, and returns its error: a page is not decided against part of it.
func (e *Engine) indexReady() error {
	_, err := e.IndexLoaded()
	return err
}

// IndexLoaded waits for the rebuild Restore started and returns the number
// of signatures it read (0 and nil when none was started).
func (e *Engine) IndexLoaded() (int, error) {
	l := &e.load
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done == nil {
		return 0, nil
	}
	<-done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.err
}

// stopIndexLoad ends a rebuild still running, and the seen filter's load,
// and waits for them (before the store closes).
func (e *Engine) stopIndexLoad() {
	if e.seenFilter != nil {
		e.seenFilter.stopLoad()
	}
	l := &e.load
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		_, _ = e.IndexLoaded()
	}
}
