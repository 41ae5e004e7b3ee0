package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// crawlUI is how 'crawler crawl' shows a running crawl: progress on stderr
// (one refreshing line on a terminal, periodic slog lines otherwise, nothing
// with --quiet) and, with --serve, the live report and /metrics over HTTP.
// A nil *crawlUI shows nothing.
type crawlUI struct {
	progress bool // show progress
	term     bool // stderr is a terminal: the refreshing line
	stderr   io.Writer
	serve    string // listen address of the live report, "" for none

	mu   sync.Mutex
	line *console.Progress // drawn while the crawl runs on a terminal
}

func newCrawlUI(stderr io.Writer, quiet bool, serve string) *crawlUI {
	return &crawlUI{progress: !quiet, term: !quiet && console.IsTerminal(stderr), stderr: stderr, serve: serve}
}

// Write is the log output: stderr, around the progress line while it is
// drawn.
func (u *crawlUI) Write(b []byte) (int, error) {
	u.mu.Lock()
	line := u.line
	u.mu.Unlock()
	if line != nil {
		return line.Writer().Write(b)
	}
	return u.stderr.Write(b)
}

// logEvery is the interval of the engine's slog progress lines: on when
// progress is shown and stderr is not a terminal.
func (u *crawlUI) logEvery() time.Duration {
	if u == nil || !u.progress || u.term {
		return 0
	}
	return 5 * time.Second
}

// start starts the progress line and the live server of a crawl whose
// counters snapshot returns; maxPages is the run's page budget (0 = none).
// stop ends both; it is safe to call more than once.
func (u *crawlUI) start(ctx context.Context, db *storage.DB, cfg configs.Config, maxPages int,
	snapshot func() crawl.Stats, logger *slog.Logger, stdout io.Writer) (stop func(), err error) {
	if u == nil {
		return func() {}, nil
	}
	var srv *live.Server
	if u.serve != "" {
		srv, err = startServe(u.serve, db, cfg, snapshot, logger)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "live report on %s, metrics on %smetrics\n", srv.URL(), srv.URL())
	}
	cancel := func() {}
	done := make(chan struct{})
	if u.term {
		p := console.NewProgress(u.stderr, snapshot, console.ProgressOptions{MaxPages: maxPages})
		u.mu.Lock()
		u.line = p
		u.mu.Unlock()
		var pctx context.Context
		pctx, cancel = context.WithCancel(ctx)
		go func() { defer close(done); p.Run(pctx) }()
	} else {
		close(done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			u.mu.Lock()
			u.line = nil
			u.mu.Unlock()
			if srv != nil {
				if err := srv.Close(); err != nil {
					logger.Warn("live report server", "err", err)
				}
			}
		})
	}, nil
}
