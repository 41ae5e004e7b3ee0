package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
)

// UI is how 'crawler crawl' shows a running crawl on stderr: one refreshing
// progress line on a terminal, periodic slog lines otherwise, nothing when
// quiet. A nil *UI shows nothing.
type UI struct {
	progress bool // show progress
	term     bool // stderr is a terminal: the refreshing line
	stderr   io.Writer

	mu   sync.Mutex
	line *Progress // drawn while the crawl runs on a terminal
}

// NewUI returns the UI of a crawl whose log and progress go to stderr.
func NewUI(stderr io.Writer, quiet bool) *UI {
	return &UI{progress: !quiet, term: !quiet && IsTerminal(stderr), stderr: stderr}
}

// NewLogger returns the crawler's logger on w: info and above, warnings and
// above when quiet.
func NewLogger(w io.Writer, quiet bool) *slog.Logger {
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// Write is the log output: stderr, around the progress line while it is
// drawn.
func (u *UI) Write(b []byte) (int, error) {
	u.mu.Lock()
	line := u.line
	u.mu.Unlock()
	if line != nil {
		return line.Writer().Write(b)
	}
	return u.stderr.Write(b)
}

// LogEvery is the interval of the engine's slog progress lines: on when
// progress is shown and stderr is not a terminal.
func (u *UI) LogEvery() time.Duration {
	if u == nil || !u.progress || u.term {
		return 0
	}
	return 5 * time.Second
}

// Start draws the progress line of a crawl whose counters snapshot returns,
// on a terminal; maxPages is the run's page budget (0 = none). stop ends
// the line; it is safe to call more than once.
func (u *UI) Start(ctx context.Context, maxPages int, snapshot func() crawl.Stats) (stop func()) {
	if u == nil || !u.term {
		return func() {}
	}
	p := NewProgress(u.stderr, snapshot, ProgressOptions{MaxPages: maxPages})
	u.mu.Lock()
	u.line = p
	u.mu.Unlock()
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(pctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			u.mu.Lock()
			u.line = nil
			u.mu.Unlock()
		})
	}
}

// WriteSummary prints the closing lines of a crawl's run: finished (nothing
// left queued and not interrupted) or stopped, its duration, requests, what
// is left, and each host given up.
func WriteSummary(w io.Writer, c *crawl.Crawl, interrupted bool, elapsed time.Duration, dir string) {
	st := c.Queues.Stats()
	how := "stopped"
	if st.Queued == 0 && st.Err == nil && !interrupted {
		how = "finished"
	}
	left := fmt.Sprintf("%d queued left", st.Queued)
	if st.Err != nil {
		left = "queued left unknown (" + st.Err.Error() + ")"
	}
	fmt.Fprintf(w, "crawl %s in %s: %d requests, %s, data in %s\n",
		how, elapsed.Round(time.Millisecond), c.Engine.Requests(), left, dir)
	for _, g := range c.Queues.GiveUps() {
		fmt.Fprintf(w, "gave up host %s: %s\n", g.Host, g.Reason)
	}
	if a, err := c.Engine.Aliases(); err == nil && a != nil {
		fmt.Fprintf(w, "canonical hints: %d requests saved, %d withdrawn, %d of %d claims wrong, %d hosts distrusted\n",
			a.RequestsSaved, a.Withdrawn, a.ClaimsWrong, a.ClaimsChecked, len(a.Distrusted))
	}
}
