package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/session"
)

// cmdServe serves a finished (or stopped) crawl's report and metrics until
// interrupted or ctx is done.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	data := fs.String("data", "./crawl-data", "data directory of a crawl")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address, host:port (port 0 picks a free one)")
	cfgPath := fs.String("config", "", "config file the crawl used (for the filter curve)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	db, err := session.OpenExisting(*data)
	if err != nil {
		return asUsage(err)
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := console.NewLogger(stderr, false)
	if err := session.DamageError(*data, db, "serving what can be read"); err != nil {
		logger.Warn(err.Error())
	}
	srv, err := live.StartReport(live.Serving{Addr: *addr, Token: serveToken(cfg)}, db, cfg.Dedup, nil, logger)
	if err != nil {
		return asUsage(err)
	}
	fmt.Fprintf(stdout, "serving the report of %s on %s (metrics at %smetrics); interrupt to stop\n",
		*data, srv.URL(), srv.URL())
	<-ctx.Done()
	return srv.Close()
}
