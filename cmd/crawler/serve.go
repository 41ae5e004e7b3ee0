package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
)

// cmdServe serves a finished (or stopped) crawl's report and metrics until
// interrupted or ctx is done: of one data dir, or merged of several (the
// workers' dirs of a shared crawl, given or found through Redis), the report
// `crawler report` writes of the same dirs.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	var dirs dataDirs
	fs.Var(&dirs, "data", "data directory of a crawl (default ./crawl-data); given more than once, the workers' dirs of one shared crawl, merged")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address, host:port (port 0 picks a free one)")
	cfgPath := fs.String("config", "", "config file the crawl used (for the filter curve)")
	var sf sharedFlags
	sf.add(fs, "the data dirs its workers registered (those on this machine)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	workers, err := sf.findDirs(&dirs, stderr)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	served, err := session.OpenServed(dirs.or("./crawl-data"), cfg)
	if err != nil {
		return asUsage(err)
	}
	defer served.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := console.NewLogger(stderr, false)
	for _, err := range served.Damage("serving what can be read") {
		logger.Warn(err.Error())
	}
	sv := live.Serving{Addr: *addr, Token: session.ServeToken(cfg), Report: served.Report, Stats: served.Stats, KeptWorkers: served.Workers()}
	if workers != nil { // as crawler report: Redis's records, the dead and live workers too
		sv.KeptWorkers = workers
		sv.Report = func() (*report.Data, error) {
			d, err := served.Report()
			if err == nil {
				d.Workers = workers
			}
			return d, err
		}
	}
	srv, err := live.StartReport(sv, nil, cfg.Dedup, nil, logger)
	if err != nil {
		return asUsage(err)
	}
	fmt.Fprintf(stdout, "serving the report of %s on %s (metrics at %smetrics); interrupt to stop\n",
		strings.Join(dirs.or("./crawl-data"), ", "), srv.URL(), srv.URL())
	<-ctx.Done()
	return srv.Close()
}
