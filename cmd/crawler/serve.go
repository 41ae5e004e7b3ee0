package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/storage"
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
	db, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := newLogger(stderr, false)
	if err := damageError(*data, db, "serving what can be read"); err != nil {
		logger.Warn(err.Error())
	}
	srv, err := startServe(*addr, db, cfg, nil, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "serving the report of %s on %s (metrics at %smetrics); interrupt to stop\n",
		*data, srv.URL(), srv.URL())
	<-ctx.Done()
	return srv.Close()
}

// startServe serves db's report (GET /, GET /report.json) and metrics (GET
// /metrics) on addr. snapshot gives the counters of a crawl running in this
// process, and makes the HTML report reload itself; nil means a finished
// crawl whose counters are read from the store.
func startServe(addr string, db *storage.DB, cfg configs.Config, snapshot func() crawl.Stats, logger *slog.Logger) (*live.Server, error) {
	name, curve, err := filterCurve(cfg)
	if err != nil {
		return nil, err
	}
	e2e, err := endToEndCurve(cfg)
	if err != nil {
		return nil, err
	}
	o := live.Options{Filter: name, Curve: curve, EndToEnd: e2e, RuntimeMetrics: true, Logger: logger.With("system", "serve")}
	if snapshot != nil {
		o.Live = true
		o.Snapshot = func() (crawl.Stats, error) { return snapshot(), nil }
	}
	h, err := live.NewHandler(db, o)
	if err != nil {
		return nil, err
	}
	srv, err := live.Start(addr, h, logger.With("system", "serve"))
	if err != nil {
		return nil, usageError{fmt.Errorf("cannot serve on %s: %w", addr, err)}
	}
	return srv, nil
}
