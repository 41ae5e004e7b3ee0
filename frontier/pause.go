package frontier

import "context"

// Pause stops leasing: Next waits (and never reports the crawl done) until
// Resume, Stop or its context's end. Leases already made run to their end.
func (f *Frontier) Pause() {
	f.mu.Lock()
	f.paused = true
	f.notify()
	f.mu.Unlock()
}

// Resume lets Next lease again after Pause.
func (f *Frontier) Resume() {
	f.mu.Lock()
	f.paused = false
	f.notify()
	f.mu.Unlock()
}

// Paused reports whether the frontier is paused.
func (f *Frontier) Paused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

// awaitChange is called by Next with f.mu held: it releases it and waits for
// the next change of state (Resume, Stop) or ctx's end.
func (f *Frontier) awaitChange(ctx context.Context) error {
	ch := f.changed
	f.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}
