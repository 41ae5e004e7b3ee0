package live

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// workersTimeout bounds a read of the workers' records from Redis (a scrape
// or a report waits no longer for a Redis that does not answer).
const workersTimeout = 2 * time.Second

// workersCollector exports a shared crawl's totals and every worker's
// counters, as their records in Redis say (one read per scrape), or as a
// finished crawl's report shows them (Options.KeptWorkers). Worker series
// are labelled by worker id; a worker that left or died keeps its series
// (its pages are the crawl's), with horseshoe_worker_up 0.
type workersCollector struct {
	read                                  WorkersFunc
	fromRedis                             bool // horseshoe_redis_up says whether read could
	crawlPages, crawlRequests, crawlQueue *prometheus.Desc
	workersBy                             *prometheus.Desc
	pages, requests, queue, inFlight      *prometheus.Desc
	partitions, up, info, heartbeat       *prometheus.Desc
	texts, redisUp                        *prometheus.Desc
	leaseChecks, staleEnds                *prometheus.Desc
	logger                                *slog.Logger
}

// workersCollectorOf is the workers collector o asks for: of Redis's
// records (o.Workers) or of a finished crawl's (o.KeptWorkers); nil for
// neither.
func workersCollectorOf(o Options, logger *slog.Logger) *workersCollector {
	switch {
	case o.Workers != nil:
		return newWorkersCollector(o.Workers, true, logger)
	case o.KeptWorkers != nil:
		kept := o.KeptWorkers
		return newWorkersCollector(func(context.Context) (*report.Workers, error) { return kept, nil }, false, logger)
	}
	return nil
}

func newWorkersCollector(read WorkersFunc, fromRedis bool, logger *slog.Logger) *workersCollector {
	w := []string{"worker"}
	return &workersCollector{
		read: read, fromRedis: fromRedis, logger: logger,
		redisUp: prometheus.NewDesc("horseshoe_redis_up",
			"1 when this worker read the shared crawl's records from Redis for this scrape; 0 when it could not (crawl-wide data unavailable: the horseshoe_crawl_* and horseshoe_worker_* series are absent, this worker's own are served).", nil, nil),
		crawlPages: prometheus.NewDesc("horseshoe_crawl_pages_total",
			"Page records by class of the whole shared crawl: every worker's, summed.", []string{"class"}, nil),
		crawlRequests: prometheus.NewDesc("horseshoe_crawl_requests_total",
			"HTTP requests of the whole shared crawl, robots.txt included.", nil, nil),
		crawlQueue: prometheus.NewDesc("horseshoe_crawl_queue_size",
			"URLs queued in the partitions of the live workers.", nil, nil),
		workersBy: prometheus.NewDesc("horseshoe_crawl_workers",
			"Workers of the shared crawl by state: live, paused (Redis refuses its writes; heartbeat current), left (finished or stopped), dead (heartbeat expired).", []string{"state"}, nil),
		pages: prometheus.NewDesc("horseshoe_worker_pages_total",
			"A worker's page records by class, from its last heartbeat.", []string{"worker", "class"}, nil),
		requests: prometheus.NewDesc("horseshoe_worker_requests_total",
			"A worker's HTTP requests, robots.txt included, from its last heartbeat.", w, nil),
		queue: prometheus.NewDesc("horseshoe_worker_queue_size",
			"URLs queued in the partitions a worker holds.", w, nil),
		inFlight: prometheus.NewDesc("horseshoe_worker_in_flight",
			"URLs a worker took from the queues and has not finished.", w, nil),
		partitions: prometheus.NewDesc("horseshoe_worker_partitions",
			"Partitions a worker holds.", w, nil),
		up: prometheus.NewDesc("horseshoe_worker_up",
			"1 while a worker's heartbeat is current (live or paused), 0 when it left or died.", w, nil),
		info: prometheus.NewDesc("horseshoe_worker_info",
			"A worker's machine, process id, data dir and state (value 1).", []string{"worker", "host", "pid", "dir", "state"}, nil),
		texts: prometheus.NewDesc("horseshoe_worker_remote_texts_total",
			"A worker's requests for candidate originals' texts kept by other workers (near-duplicate settlement), by outcome: asked, answered, fell_back (the sketch rule decided).", []string{"worker", "outcome"}, nil),
		leaseChecks: prometheus.NewDesc("horseshoe_worker_lease_checks_total",
			"A worker's lease checks before requests (docs/SCALE.md), by outcome: checked, lease_gone, lease_short, no_answer (each of the last three a request not sent).", []string{"worker", "outcome"}, nil),
		staleEnds: prometheus.NewDesc("horseshoe_worker_stale_lease_ends_total",
			"A worker's commits that left the URL's in-flight record to a new holder of its partition (the worker stalled past its lease after its request).", w, nil),
		heartbeat: prometheus.NewDesc("horseshoe_worker_heartbeat_timestamp_seconds",
			"When a worker's last heartbeat was (Redis's clock).", w, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *workersCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.crawlPages, c.crawlRequests, c.crawlQueue, c.workersBy, c.pages, c.requests,
		c.queue, c.inFlight, c.partitions, c.up, c.info, c.heartbeat, c.texts, c.redisUp, c.leaseChecks, c.staleEnds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed read leaves the
// crawl-wide series out (not zeros) with horseshoe_redis_up 0: the scrape
// still serves this worker's own counters.
func (c *workersCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), workersTimeout)
	defer cancel()
	v, err := c.read(ctx)
	if err != nil {
		c.logger.Warn("metrics without the shared crawl's workers", "err", unavailable(err))
		ch <- prometheus.MustNewConstMetric(c.redisUp, prometheus.GaugeValue, 0)
		return
	}
	if c.fromRedis {
		ch <- prometheus.MustNewConstMetric(c.redisUp, prometheus.GaugeValue, 1)
	}
	gauge := func(d *prometheus.Desc, n float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, n, labels...)
	}
	counter := func(d *prometheus.Desc, n float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, n, labels...)
	}
	for _, class := range classesOf(v.Total.ByClass) {
		counter(c.crawlPages, float64(v.Total.ByClass[class]), class)
	}
	counter(c.crawlRequests, float64(v.Total.Requests))
	gauge(c.crawlQueue, float64(v.Total.Queued))
	gauge(c.workersBy, float64(v.Live), "live")
	gauge(c.workersBy, float64(v.Paused), "paused")
	gauge(c.workersBy, float64(v.Left), "left")
	gauge(c.workersBy, float64(v.Dead), "dead")
	for _, w := range v.Rows {
		for _, class := range classesOf(w.ByClass) {
			counter(c.pages, float64(w.ByClass[class]), w.ID, class)
		}
		counter(c.requests, float64(w.Requests), w.ID)
		counter(c.texts, float64(w.TextsAsked), w.ID, "asked")
		counter(c.texts, float64(w.TextsAnswered), w.ID, "answered")
		counter(c.texts, float64(w.TextsFellBack), w.ID, "fell_back")
		counter(c.leaseChecks, float64(w.LeaseChecks), w.ID, "checked")
		counter(c.leaseChecks, float64(w.LeaseGone), w.ID, "lease_gone")
		counter(c.leaseChecks, float64(w.LeaseShort), w.ID, "lease_short")
		counter(c.leaseChecks, float64(w.LeaseNoAnswer), w.ID, "no_answer")
		counter(c.staleEnds, float64(w.StaleLeaseEnds), w.ID)
		gauge(c.queue, float64(w.Queued), w.ID)
		gauge(c.inFlight, float64(w.InFlight), w.ID)
		gauge(c.partitions, float64(w.Partitions), w.ID)
		up := 0.0
		if w.State == "live" || w.State == "paused" {
			up = 1
		}
		gauge(c.up, up, w.ID)
		gauge(c.info, 1, w.ID, w.Host, strconv.Itoa(w.PID), w.Dir, w.State)
		gauge(c.heartbeat, float64(w.Heartbeat.UnixMilli())/1000, w.ID)
	}
}

// classesOf is every known class, then any other in counts, sorted.
func classesOf(counts map[string]int64) []string {
	out := make([]string, 0, len(storage.Classes))
	for _, c := range storage.Classes {
		out = append(out, string(c))
	}
	var other []string
	for c := range counts {
		if !knownClass(c) {
			other = append(other, c)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}
