package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Workers is the shared crawl's view of its workers, from their records in
// Redis (one round trip): for the live report and metrics of this worker.
func (w *Worker) Workers(ctx context.Context) (*report.Workers, error) {
	ws, err := redisstate.ReadWorkers(ctx, w.crawl.Client(), w.crawl.Name())
	if err != nil {
		return nil, err
	}
	return workersView(w.crawl.Name(), report.WorkersFromRedis, ws), nil
}

func workersView(name, from string, ws []redisstate.WorkerInfo) *report.Workers {
	v := &report.Workers{Crawl: name, From: from, Rows: []report.Worker{}, Total: report.WorkerCounts{ByClass: map[string]int64{}}}
	for _, wi := range ws {
		v.Add(report.Worker{ID: wi.ID, Host: wi.Host, PID: wi.PID, Dir: wi.Dir, State: wi.State, Paused: wi.Paused,
			Started: time.UnixMilli(wi.Started).UTC(), Heartbeat: time.UnixMilli(wi.Heartbeat).UTC(),
			Partitions: wi.Partitions, PartitionList: wi.PartitionList,
			WorkerCounts: report.WorkerCounts{Pages: wi.Pages, Requests: wi.Requests, ByClass: wi.ByClass,
				Errors: wi.ByClass["error"], Queued: wi.Queued, InFlight: wi.InFlight,
				TextsAsked: wi.TextsAsked, TextsAnswered: wi.TextsAnswered, TextsFellBack: wi.TextsFellBack,
				LeaseChecks: wi.LeaseChecks, LeaseGone: wi.LeaseGone, LeaseShort: wi.LeaseShort, LeaseNoAnswer: wi.LeaseNoAnswer,
				StaleLeaseEnds: wi.StaleLeaseEnds}})
	}
	return v
}

// keptWorker is a worker's final record as its data dir keeps it
// (storage.MetaWorkers).
type keptWorker struct {
	Crawl string `json:"crawl"`
	redisstate.WorkerInfo
}

// keepWorker adds w, a worker of crawl name that left, to the records db
// keeps (one per run on the data dir).
func keepWorker(db *storage.DB, name string, w redisstate.WorkerInfo) error {
	kept, err := keptWorkers(db)
	if err != nil {
		return err
	}
	kept = slices.DeleteFunc(kept, func(k keptWorker) bool { return k.ID == w.ID })
	b, err := json.Marshal(append(kept, keptWorker{Crawl: name, WorkerInfo: w}))
	if err != nil {
		return err
	}
	return db.PutMeta(storage.MetaWorkers, b)
}

// keptWorkers reads the worker records db keeps (none outside a shared
// crawl).
func keptWorkers(db *storage.DB) ([]keptWorker, error) {
	b, err := db.GetMeta(storage.MetaWorkers)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var kept []keptWorker
	if err := json.Unmarshal(b, &kept); err != nil {
		return nil, fmt.Errorf("meta %s: bad worker records: %w", storage.MetaWorkers, err)
	}
	for i := range kept {
		kept[i].State = redisstate.WorkerLeft
	}
	return kept, nil
}

// keptView is the workers view of the records kept in the data dirs (nil
// when none keeps one): by start time, each worker once.
func keptView(kept []keptWorker) *report.Workers {
	if len(kept) == 0 {
		return nil
	}
	var ws []redisstate.WorkerInfo
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, k := range kept {
		if !seen[k.ID] {
			seen[k.ID] = true
			names[k.Crawl] = true
			ws = append(ws, k.WorkerInfo)
		}
	}
	slices.SortStableFunc(ws, func(a, b redisstate.WorkerInfo) int {
		return cmp.Or(cmp.Compare(a.Started, b.Started), cmp.Compare(a.ID, b.ID))
	})
	return workersView(strings.Join(slices.Sorted(maps.Keys(names)), ", "), report.WorkersFromDirs, ws)
}

// SharedDirs are the data dirs of a shared crawl's workers, as they
// registered them in Redis.
type SharedDirs struct {
	// Local are the dirs on this machine (its host name), in the order the
	// workers joined, each once.
	Local []string
	// Elsewhere are the dirs this process cannot read: on another machine,
	// or missing here ("host:dir (why)").
	Elsewhere []string
	// Workers are the workers' records in Redis, as the reports show them.
	Workers *report.Workers
}

// FindDataDirs reads the data dirs the workers of the crawl o names
// registered in Redis.
func FindDataDirs(ctx context.Context, o SharedOptions) (SharedDirs, error) {
	var d SharedDirs
	if o.Name == "" {
		return d, usagef("--redis needs --crawl NAME (the shared crawl whose data dirs to read)")
	}
	rdb, err := connectRedis(ctx, o)
	if err != nil {
		return d, err
	}
	defer rdb.Close()
	ws, err := redisstate.ReadWorkers(ctx, rdb, o.Name)
	if err != nil {
		return d, err
	}
	d.Workers = workersView(o.Name, report.WorkersFromRedis, ws)
	host, _ := os.Hostname()
	seen := map[string]bool{}
	for _, w := range ws {
		key := w.Host + "\x00" + w.Dir
		if seen[key] {
			continue // a worker that ran again on its dir
		}
		seen[key] = true
		switch _, err := os.Stat(w.Dir); {
		case w.Host != host:
			d.Elsewhere = append(d.Elsewhere, fmt.Sprintf("%s:%s (on another machine)", w.Host, w.Dir))
		case err != nil:
			d.Elsewhere = append(d.Elsewhere, fmt.Sprintf("%s:%s (missing here: %v)", w.Host, w.Dir, err))
		default:
			d.Local = append(d.Local, w.Dir)
		}
	}
	if len(d.Local) == 0 {
		return d, fmt.Errorf("no data dir of crawl %q is on this machine (%s); the workers' dirs: %v", o.Name, host, d.Elsewhere)
	}
	return d, nil
}
