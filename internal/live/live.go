// Package live serves a crawl's report over HTTP, while the crawl runs
// ('crawler crawl --serve ADDR') or after it ('crawler serve --data DIR',
// one data dir or several merged):
//
//	GET /             the HTML report, rendered from the store on request
//	GET /report.json  the JSON report (report/SCHEMA.md)
//	GET /metrics      Prometheus text format: pages by class, requests,
//	                  queue size, fetches in flight, hosts, plus the Go
//	                  runtime and process collectors; in a shared crawl
//	                  also the crawl's totals and every worker's counters
//	                  (workers.go: from Redis while it runs, from the
//	                  workers' records when it is finished)
//	/api/...          the control API (control.go): status, seeds, pause,
//	                  resume, stop
//
// StartReport serves a Handler behind auth.go's rule: loopback only without
// a token, the token on every request with one.
//
// The reports are read from the store with crawl.ReportData (or built by
// Options.Report: a finished crawl's, as `crawler report` writes it); Badger
// reads do not block the engine's writes. A rendered report is reused for
// Options.CacheFor, so a reload storm costs one store scan per interval. The
// metrics come from a snapshot function (crawl.Engine.Snapshot during a
// crawl, crawl.StoredStats or Options.Snapshot for a finished one) and are
// registered in a registry of the Handler's own, never the global one.
package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// SnapshotFunc returns the crawl's current counters.
type SnapshotFunc func() (crawl.Stats, error)

// WorkersFunc returns the workers of a shared crawl, from Redis.
type WorkersFunc func(context.Context) (*report.Workers, error)

// ReportFunc builds a crawl's report.
type ReportFunc func() (*report.Data, error)

// Options configures a Handler.
type Options struct {
	// Filter and Curve describe the configured supershingle filter for
	// the report (see crawl.ReportData).
	Filter string
	Curve  []report.CurvePoint
	// EndToEnd is the measured end-to-end curve (report.Data.EndToEnd).
	EndToEnd []report.CurvePoint
	// Snapshot gives the counters for /metrics and tells whether the crawl
	// runs; nil reads them from the store (crawl.StoredStats) per scrape.
	Snapshot SnapshotFunc
	// CacheFor is how long a rendered report is served again before the
	// store is read anew (default 1s; negative: never reuse).
	CacheFor time.Duration
	// Live means the crawl runs in this process: the HTML report then asks
	// the browser to reload every Refresh (default 10s; negative: never).
	Live    bool
	Refresh time.Duration
	// RuntimeMetrics adds the Go runtime and process collectors to /metrics.
	RuntimeMetrics bool
	// Logger receives errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Controls are the control API's actions on the crawl running in this
	// process; nil serves the status of a finished crawl and refuses the
	// actions (409).
	Controls *Controls
	// Workers, in a worker of a shared crawl, reads every worker's record:
	// the reports show them (report.Data.Workers) and /metrics their
	// counters and the crawl's totals. nil: not a shared crawl.
	Workers WorkersFunc
	// KeptWorkers, serving a finished shared crawl, are its workers as its
	// report shows them (the records its data dirs kept, or Redis's read
	// once): /metrics shows their counters and the crawl's totals as a
	// live worker's does, without horseshoe_redis_up (Redis is not read
	// per scrape). Ignored with Workers.
	KeptWorkers *report.Workers
	// Report builds the report (the one `crawler report` writes: a
	// finished crawl's, with the workers section its data dirs keep); nil
	// reads it from the store with Filter, Curve and EndToEnd.
	Report ReportFunc
}

// Handler serves the report and the metrics of one store, or of the stores
// Options.Report and Options.Snapshot read.
type Handler struct {
	db     *storage.DB
	o      Options
	mux    *http.ServeMux
	ctl    *control
	logger *slog.Logger

	mu    sync.Mutex // serializes rendering; guards cache
	cache map[string]rendered
}

type rendered struct {
	body []byte
	at   time.Time
}

// NewHandler returns the handler for db's crawl; db may be nil when
// o.Report and o.Snapshot read the crawl.
func NewHandler(db *storage.DB, o Options) (*Handler, error) {
	if db == nil && (o.Report == nil || o.Snapshot == nil) {
		return nil, errors.New("live: nil store")
	}
	if o.CacheFor == 0 {
		o.CacheFor = time.Second
	}
	if o.Refresh == 0 {
		o.Refresh = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Snapshot == nil {
		o.Snapshot = func() (crawl.Stats, error) { return crawl.StoredStats(db) }
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{db: db, o: o, logger: logger, cache: map[string]rendered{}, mux: http.NewServeMux()}

	reg := prometheus.NewRegistry()
	if err := reg.Register(NewCollector(o.Snapshot)); err != nil {
		return nil, fmt.Errorf("live: register metrics: %w", err)
	}
	if wc := workersCollectorOf(o, logger); wc != nil {
		if err := reg.Register(wc); err != nil {
			return nil, fmt.Errorf("live: register metrics: %w", err)
		}
	}
	if o.RuntimeMetrics {
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("live: register metrics: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("live: register metrics: %w", err)
		}
	}
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.HTTPErrorOnError,
	}))
	h.mux.HandleFunc("GET /{$}", h.serveHTML)
	h.mux.HandleFunc("GET /report.json", h.serveJSON)
	h.mux.HandleFunc("/api/", h.serveAPI)
	h.ctl = newControl(o.Controls, o.Now)
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) serveHTML(w http.ResponseWriter, r *http.Request) {
	body, err := h.render("html", report.WriteHTML)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// The report has no scripts and no external resources: forbid both,
	// as a second line of defence behind the template's escaping.
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
	hd.Set("Cache-Control", "no-store")
	if h.o.Live && h.o.Refresh > 0 {
		hd.Set("Refresh", strconv.Itoa(int(h.o.Refresh.Round(time.Second)/time.Second)))
	}
	w.Write(body)
}

func (h *Handler) serveJSON(w http.ResponseWriter, r *http.Request) {
	body, err := h.render("json", report.WriteJSON)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.logger.Error("cannot render report", "path", r.URL.Path, "err", err)
	http.Error(w, "cannot read the crawl: "+err.Error(), http.StatusInternalServerError)
}

// render returns the report in one format, from the cache when it is fresh.
func (h *Handler) render(format string, write func(io.Writer, *report.Data) error) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.o.Now()
	if c, ok := h.cache[format]; ok && h.o.CacheFor > 0 && now.Sub(c.at) < h.o.CacheFor {
		return c.body, nil
	}
	d, err := h.report()
	if err != nil {
		return nil, fmt.Errorf("read report data: %w", err)
	}
	if h.o.Workers != nil {
		d.Workers, d.Unavailable = h.readWorkers()
	}
	var buf bytes.Buffer
	if err := write(&buf, d); err != nil {
		return nil, err
	}
	h.cache[format] = rendered{body: buf.Bytes(), at: now}
	return buf.Bytes(), nil
}

// report builds the report: with Options.Report, or from the store.
func (h *Handler) report() (*report.Data, error) {
	if h.o.Report != nil {
		return h.o.Report()
	}
	d, err := crawl.ReportData(h.db, h.o.Filter, h.o.Curve)
	if err != nil {
		return nil, err
	}
	d.EndToEnd = h.o.EndToEnd
	return d, nil
}

// readWorkers reads the workers of the shared crawl; when Redis cannot be
// read, it says why instead (the report shows what this worker knows
// locally: its data dir).
func (h *Handler) readWorkers() (*report.Workers, string) {
	ctx, cancel := context.WithTimeout(context.Background(), workersTimeout)
	defer cancel()
	w, err := h.o.Workers(ctx)
	if err != nil {
		h.logger.Warn("live report without the shared crawl's workers", "err", err)
		return nil, unavailable(err)
	}
	return w, ""
}

// unavailable is the note shown in place of the crawl-wide data.
func unavailable(err error) string { return "crawl-wide data unavailable: " + err.Error() }

// Collector exports a crawl's counters to Prometheus.
type Collector struct {
	snapshot                       SnapshotFunc
	pages, requests                *prometheus.Desc
	queued, active, hosts, running *prometheus.Desc
}

// NewCollector returns a collector that calls snapshot on every scrape.
func NewCollector(snapshot SnapshotFunc) *Collector {
	return &Collector{
		snapshot: snapshot,
		pages: prometheus.NewDesc("horseshoe_pages_total",
			"Page records by class: unique, exact_duplicate, near_duplicate, mirror_skipped, robots_disallowed, not_html, error.",
			[]string{"class"}, nil),
		requests: prometheus.NewDesc("horseshoe_requests_total",
			"HTTP requests sent, robots.txt included.", nil, nil),
		queued: prometheus.NewDesc("horseshoe_queue_size",
			"URLs waiting in the frontier (absent when a shared crawl's Redis cannot be read).", nil, nil),
		active: prometheus.NewDesc("horseshoe_active_fetches",
			"Fetches in flight (at most one per host).", nil, nil),
		hosts: prometheus.NewDesc("horseshoe_hosts",
			"Hosts known to the crawl.", nil, nil),
		running: prometheus.NewDesc("horseshoe_crawl_running",
			"1 while a crawl runs in this process, 0 when the report is of a finished crawl.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pages, c.requests, c.queued, c.active, c.hosts, c.running} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed snapshot makes the
// scrape fail rather than report zeros.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.snapshot()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.requests, fmt.Errorf("crawl snapshot: %w", err))
		return
	}
	for _, class := range storage.Classes {
		ch <- prometheus.MustNewConstMetric(c.pages, prometheus.CounterValue, float64(s.ByClass[string(class)]), string(class))
	}
	for class, n := range s.ByClass {
		if !knownClass(class) {
			ch <- prometheus.MustNewConstMetric(c.pages, prometheus.CounterValue, float64(n), class)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(s.Requests))
	if s.QueuedErr == nil { // unknown (a shared crawl's Redis): no sample rather than 0
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued))
	}
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(s.Active))
	ch <- prometheus.MustNewConstMetric(c.hosts, prometheus.GaugeValue, float64(s.Hosts))
	run := 0.0
	if s.Running {
		run = 1
	}
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, run)
}

func knownClass(class string) bool {
	for _, c := range storage.Classes {
		if string(c) == class {
			return true
		}
	}
	return false
}

// Server is a running HTTP server for a Handler.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error

	closeOnce sync.Once
	closeErr  error
}

// Start listens on addr (host:port; port 0 picks a free one) and serves h
// in a goroutine until Close.
func Start(addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("live: listen: %w", err)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       60 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the server's base URL, e.g. http://127.0.0.1:8080/.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Close stops the server: it stops accepting, lets requests in flight
// finish for up to five seconds, closes what remains, and waits for the
// serving goroutine. Later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("live: close: %w", err)
	}
	return nil
}
