package live

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// ListenError is StartReport's error when addr cannot be listened on.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return fmt.Sprintf("cannot serve on %s: %v", e.Addr, e.Err) }
func (e *ListenError) Unwrap() error { return e.Err }

// Serving says where a report is served and what its control API can do.
type Serving struct {
	// Addr is host:port; port 0 picks a free one. A host that is not
	// loopback needs Token (CheckBind).
	Addr string
	// Token, when set, must come with every request (auth.go).
	Token string
	// Controls act on the crawl running in this process (nil: none runs).
	Controls *Controls
	// Workers reads the workers of a shared crawl this process works on
	// (nil: not a shared crawl).
	Workers WorkersFunc
	// Report builds the report of a finished crawl (Options.Report).
	Report ReportFunc
	// Stats reads the counters of a finished crawl (Options.Snapshot; nil:
	// from the store).
	Stats SnapshotFunc
	// KeptWorkers are a finished shared crawl's workers (Options.KeptWorkers).
	KeptWorkers *report.Workers
}

// StartReport serves db's report (GET /, GET /report.json), metrics (GET
// /metrics) and control API (/api/) as sv says, with the curves of the
// detector d configures. snapshot gives the counters of a crawl running in
// this process, and makes the HTML report reload itself; nil means a
// finished crawl whose counters sv.Stats reads, or the store. db may be
// nil when sv.Report and sv.Stats read the crawl (several data dirs).
func StartReport(sv Serving, db *storage.DB, d configs.Dedup, snapshot func() crawl.Stats, logger *slog.Logger) (*Server, error) {
	addr := sv.Addr
	if err := CheckBind(addr, sv.Token); err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	logger = logger.With("system", "serve")
	o := Options{RuntimeMetrics: true, Logger: logger, Controls: sv.Controls,
		Workers: sv.Workers, KeptWorkers: sv.KeptWorkers, Report: sv.Report, Snapshot: sv.Stats}
	if sv.Report == nil { // the report of db, with the curves
		c, err := crawl.ReportCurves(d)
		if err != nil {
			return nil, err
		}
		o.Filter, o.Curve, o.EndToEnd = c.Filter, c.Curve, c.EndToEnd
	}
	if snapshot != nil {
		o.Live = true
		o.Snapshot = func() (crawl.Stats, error) { return snapshot(), nil }
	}
	h, err := NewHandler(db, o)
	if err != nil {
		return nil, err
	}
	srv, err := Start(addr, guard(sv.Token, h), logger)
	if err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	return srv, nil
}

// StartLive serves the live report, /metrics and the control API of a crawl
// running in this process as sv says (sv.Addr "" for nowhere) and says where
// on w; stop closes the server and may be called again.
func StartLive(sv Serving, db *storage.DB, d configs.Dedup, snapshot func() crawl.Stats, logger *slog.Logger, w io.Writer) (stop func(), err error) {
	if sv.Addr == "" {
		return func() {}, nil
	}
	srv, err := StartReport(sv, db, d, snapshot, logger)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "live report on %s, metrics on %smetrics, control API on %sapi/\n", srv.URL(), srv.URL(), srv.URL())
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := srv.Close(); err != nil {
				logger.Warn("live report server", "err", err)
			}
		})
	}, nil
}
