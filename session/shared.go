package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// redisRoots is the TLS configuration trusting the PEM certificates in file
// ("" : the system's roots).
func redisRoots(file string) (*tls.Config, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef("--redis-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, usagef("--redis-ca %s: no PEM certificate", file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Worker is this process's membership of a shared crawl.
type Worker struct {
	crawl *redisstate.Crawl
	m     *redisstate.Member

	store     *redisstate.Store                // its remote text service runs until Leave
	texts     atomic.Pointer[redisstate.Store] // store, for the heartbeat's record
	stopTexts func()
	logger    *slog.Logger

	counts atomic.Pointer[func() crawl.Stats]  // the engine's counters, once it runs
	fr     atomic.Pointer[redisstate.Frontier] // its lease checks, logged at Leave
	left   sync.Once
}

// SharedOptions name the shared crawl a process joins: the Redis URL
// (redis:// or rediss://), the crawl's name and a PEM file of the CA that
// signed Redis's certificate ("": the system's roots). Dir is the worker's
// data dir, registered in Redis for the merged report and export.
type SharedOptions struct {
	Redis, Name, CAFile string
	Dir                 string
}

// JoinShared connects to the crawl named in o and joins it; the seeds
// given are added to the crawl's, and all of them are returned.
func JoinShared(ctx context.Context, o SharedOptions, seeds []string, logger *slog.Logger) (*Worker, []string, error) {
	if o.Name == "" {
		return nil, nil, usagef("--redis needs --crawl NAME (the crawl this process works on)")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := connectRedis(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if _, err := redisstate.EnsureServerConfig(ctx, rdb); err != nil {
		logger.Warn("cannot raise the server's listpack limits (Redis memory per item grows; docs/SCALE.md)", "err", err)
	}
	c, err := redisstate.Open(ctx, rdb, o.Name, redisstate.Options{})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	all, err := c.AddSeeds(ctx, seeds)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	if len(all) == 0 {
		rdb.Close()
		return nil, nil, usagef("no seed URLs given, and crawl %q in Redis has none", o.Name)
	}
	host, _ := os.Hostname()
	id := host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	w := &Worker{crawl: c, logger: logger}
	started := time.Now().UnixMilli()
	info := func() redisstate.WorkerInfo {
		wi := redisstate.WorkerInfo{Host: host, PID: os.Getpid(), Dir: dir, Started: started}
		if f := w.counts.Load(); f != nil {
			s := (*f)()
			wi.WorkerCounts = redisstate.WorkerCounts{Pages: s.Pages, Requests: s.Requests, ByClass: s.ByClass}
		}
		if st := w.texts.Load(); st != nil {
			ts := st.TextStats()
			wi.TextsAsked, wi.TextsAnswered, wi.TextsFellBack = ts.Asked, ts.Answered, ts.FellBack
		}
		if fr := w.fr.Load(); fr != nil {
			fs := fr.FenceStats()
			wi.LeaseChecks, wi.LeaseGone, wi.LeaseShort, wi.LeaseNoAnswer = fs.Checked, fs.Lost, fs.Short, fs.Unchecked
			wi.StaleLeaseEnds = fs.StaleEnds
		}
		return wi
	}
	if w.m, err = c.Join(ctx, id, redisstate.MemberOptions{Info: info}); err != nil {
		rdb.Close()
		return nil, nil, err
	}
	logger.Info("joined shared crawl", "crawl", o.Name, "worker", id, "seeds", len(all), "data", dir)
	return w, all, nil
}

func connectRedis(ctx context.Context, o SharedOptions) (redis.UniversalClient, error) {
	roots, err := redisRoots(o.CAFile)
	if err != nil {
		return nil, err
	}
	return redisstate.Connect(ctx, o.Redis, roots)
}

// Publish makes the worker's heartbeat publish counts (the engine's
// counters: crawl.Engine.Counts) with its record in Redis.
func (w *Worker) Publish(counts func() crawl.Stats) { w.counts.Store(&counts) }

// Leave gives the worker's partitions up (what it had in flight goes back to
// the queues), keeps its final record in db, its data dir (nil: none open),
// and closes the connection. Only the first call does anything.
func (w *Worker) Leave(db *storage.DB) {
	w.left.Do(func() { w.leave(db) })
}

func (w *Worker) leave(db *storage.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if w.stopTexts != nil {
		w.stopTexts()
		st := w.store.TextStats()
		w.logger.Info("remote texts (near-duplicate settlement across workers)", "asked", st.Asked,
			"answered", st.Answered, "fell_back", st.FellBack, "keeper_gone", st.Gone, "served", st.Served)
	}
	if fr := w.fr.Load(); fr != nil {
		fs := fr.FenceStats()
		w.logger.Info("lease checks before requests", "checked", fs.Checked, "not_sent_lease_gone", fs.Lost,
			"not_sent_lease_short", fs.Short, "not_sent_unchecked", fs.Unchecked, "stale_lease_ends", fs.StaleEnds)
	}
	if err := w.m.Leave(ctx); err != nil {
		w.logger.Warn("leaving the shared crawl", "err", err)
	}
	if final, ok := w.m.Final(); ok && db != nil {
		if err := keepWorker(db, w.crawl.Name(), final); err != nil {
			w.logger.Warn("cannot keep the worker's record in its data dir (a report of the data dirs will not show it)", "err", err)
		}
	}
	w.crawl.Client().Close()
}

// Shared is the crawl.Shared of the worker over its data dir's session.
func (w *Worker) Shared(sess *Session, logger *slog.Logger) (*crawl.Shared, error) {
	store, err := w.crawl.NewStore(sess.DB, w.crawl.NewIDs(), nil, logger.With("system", "redis"))
	if err != nil {
		return nil, err
	}
	w.serveTexts(store)
	return &crawl.Shared{
		Store:  store,
		Robots: w.crawl.NewRobotsStore(w.m),
		Index: func(det *dedup.Detector) crawl.DuplicateIndex {
			return w.crawl.NewIndex(det, redisstate.DedupOptions{})
		},
		Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
			fr := w.crawl.NewFrontier(w.m, redisstate.FrontierOptions{Options: fo, OnNewHost: onNew,
				Logger: logger.With("system", "frontier")})
			store.UseFrontier(fr)
			w.fr.Store(fr)
			return fr
		},
		MirrorLog: w.crawl.MirrorLog(),
	}, nil
}

// serveTexts runs store's remote text service (the texts of this worker's
// pages, for the other workers' settlements) until Leave.
func (w *Worker) serveTexts(store *redisstate.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := store.Serve(ctx); err != nil {
			w.logger.Warn("settlements of this worker's pages by others fell back to the sketch rule", "err", err)
		}
	}()
	w.store, w.stopTexts = store, func() { cancel(); <-done }
	w.texts.Store(store)
}
