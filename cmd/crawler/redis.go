package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/session"
)

// sharedFlags make 'crawler crawl' one worker of a crawl shared through
// Redis (docs/SCALE.md).
type sharedFlags struct {
	redis, name, ca string
}

// redisRoots is the TLS configuration trusting the PEM certificates in file
// ("" : the system's roots).
func redisRoots(file string) (*tls.Config, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("--redis-ca: %w", err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, usageError{fmt.Errorf("--redis-ca %s: no PEM certificate", file)}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// worker is this process's membership of a shared crawl.
type worker struct {
	crawl *redisstate.Crawl
	m     *redisstate.Member
	sh    *crawl.Shared
}

// joinShared connects to the crawl named in sf and joins it; the seeds
// given are added to the crawl's, and all of them are returned.
func (r crawlRun) joinShared(ctx context.Context, sf sharedFlags, seeds []string) (*worker, []string, error) {
	if sf.name == "" {
		return nil, nil, usagef("--redis needs --crawl NAME (the crawl this process works on)")
	}
	roots, err := redisRoots(sf.ca)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := redisstate.Connect(ctx, sf.redis, roots)
	if err != nil {
		return nil, nil, err
	}
	if _, err := redisstate.EnsureServerConfig(ctx, rdb); err != nil {
		r.logger.Warn("cannot raise the server's listpack limits (Redis memory per item grows; docs/SCALE.md)", "err", err)
	}
	c, err := redisstate.Open(ctx, rdb, sf.name, redisstate.Options{})
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
		return nil, nil, usagef("no seed URLs given, and crawl %q in Redis has none", sf.name)
	}
	host, _ := os.Hostname()
	id := host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	m, err := c.Join(ctx, id, redisstate.MemberOptions{})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	r.logger.Info("joined shared crawl", "crawl", sf.name, "worker", id, "seeds", len(all))
	return &worker{crawl: c, m: m}, all, nil
}

// leave gives the worker's partitions up (what it had in flight goes back to
// the queues) and closes the connection.
func (w *worker) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.m.Leave(ctx)
	w.crawl.Client().Close()
}

// shared is the crawl.Shared of the worker over its data dir's session.
func (w *worker) shared(sess *session.Session, r crawlRun) *crawl.Shared {
	store := w.crawl.NewStore(sess.DB, w.crawl.NewIDs(), nil, r.logger.With("system", "redis"))
	return &crawl.Shared{
		Store: store,
		Index: func(det *dedup.Detector) crawl.DuplicateIndex {
			return w.crawl.NewIndex(det, redisstate.DedupOptions{})
		},
		Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
			fr := w.crawl.NewFrontier(w.m, redisstate.FrontierOptions{Options: fo, OnNewHost: onNew,
				Logger: r.logger.With("system", "frontier")})
			store.UseFrontier(fr)
			return fr
		},
	}
}

// crawlShared runs this process as one worker of the shared crawl sf names,
// keeping what it fetches in dataDir.
func (r crawlRun) crawlShared(ctx context.Context, cfg configs.Config, sf sharedFlags, dataDir string, seeds []string) (err error) {
	if cfg.Mirror.Enabled {
		// The mirror detector compares pages it finds in its own store and
		// keeps its decisions in memory: across workers it would see only
		// the pairs one worker fetched both sides of (docs/SCALE.md).
		r.logger.Warn("mirror detection is per process: off in a shared crawl (duplicates are still dropped crawl-wide)")
		cfg.Mirror.Enabled = false
	}
	w, all, err := r.joinShared(ctx, sf, seeds)
	if err != nil {
		return err
	}
	defer w.leave()
	sess, err := session.Open(dataDir, cfg, all, r.logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("storage: %w", cerr)
		}
	}()
	policy, err := crawl.AddrPolicy(ctx, cfg.Fetch, sess.Seeds, r.allowPrivate, r.logger)
	if err != nil {
		return err
	}
	c, err := sess.StartShared(cfg, crawl.Env{Policy: &policy, Getenv: os.Getenv, ProgressEvery: r.ui.LogEvery()}, w.shared(sess, r), r.logger)
	if errors.Is(err, crawl.ErrBudgetSpent) {
		fmt.Fprintf(r.stdout, "page budget of %d already spent in %s; nothing to do\n", cfg.Crawl.MaxPages, dataDir)
		return nil
	}
	if err != nil {
		return err
	}
	return r.run(ctx, c, cfg, sess)
}
