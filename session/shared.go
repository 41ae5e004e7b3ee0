package session

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
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
	sh    *crawl.Shared
}

// SharedOptions name the shared crawl a process joins: the Redis URL
// (redis:// or rediss://), the crawl's name and a PEM file of the CA that
// signed Redis's certificate ("": the system's roots).
type SharedOptions struct {
	Redis, Name, CAFile string
}

// JoinShared connects to the crawl named in o and joins it; the seeds
// given are added to the crawl's, and all of them are returned.
func JoinShared(ctx context.Context, o SharedOptions, seeds []string, logger *slog.Logger) (*Worker, []string, error) {
	if o.Name == "" {
		return nil, nil, usagef("--redis needs --crawl NAME (the crawl this process works on)")
	}
	roots, err := redisRoots(o.CAFile)
	if err != nil {
		return nil, nil, err
	}
	rdb, err := redisstate.Connect(ctx, o.Redis, roots)
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
	m, err := c.Join(ctx, id, redisstate.MemberOptions{})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	logger.Info("joined shared crawl", "crawl", o.Name, "worker", id, "seeds", len(all))
	return &Worker{crawl: c, m: m}, all, nil
}

// Leave gives the worker's partitions up (what it had in flight goes back to
// the queues) and closes the connection.
func (w *Worker) Leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.m.Leave(ctx)
	w.crawl.Client().Close()
}

// Shared is the crawl.Shared of the worker over its data dir's session.
func (w *Worker) Shared(sess *Session, logger *slog.Logger) *crawl.Shared {
	store := w.crawl.NewStore(sess.DB, w.crawl.NewIDs(), nil, logger.With("system", "redis"))
	return &crawl.Shared{
		Store: store,
		Index: func(det *dedup.Detector) crawl.DuplicateIndex {
			return w.crawl.NewIndex(det, redisstate.DedupOptions{})
		},
		Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
			fr := w.crawl.NewFrontier(w.m, redisstate.FrontierOptions{Options: fo, OnNewHost: onNew,
				Logger: logger.With("system", "frontier")})
			store.UseFrontier(fr)
			return fr
		},
	}
}
