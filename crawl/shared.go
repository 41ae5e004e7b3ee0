package crawl

import (
	"log/slog"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Shared is the state a worker of a shared crawl (docs/SCALE.md) uses in
// place of its own: the store, the duplicate index and the frontier of a
// second implementation of the seams (cluster/redisstate). The worker's data
// dir keeps what it fetched.
type Shared struct {
	Store Store
	// Index is the crawl-wide duplicate index deciding as det does.
	Index func(det *dedup.Detector) DuplicateIndex
	// Frontier is the worker's frontier with the politeness options of the
	// configuration; it calls onNewHost for each host it meets that this
	// worker did not queue (the engine groups it by IP).
	Frontier func(fo frontier.Options, onNewHost func(host string)) Frontier
	// MirrorLog is the crawl's log of mirror evidence (mirrorlog.go); the
	// store's transactions append to it (MirrorAppender). Without one, a
	// shared crawl detects no mirrors.
	MirrorLog MirrorLog
	// Robots keeps the crawl's robots.txt entries (fetched once per host
	// and lease); nil: the worker's data dir keeps its own.
	Robots fetch.RobotsStore
}

// robotsStore is where the robots.txt cache keeps its entries: the shared
// crawl's store, or the data dir.
func robotsStore(db *storage.DB, sh *Shared) fetch.RobotsStore {
	if sh != nil && sh.Robots != nil {
		return sh.Robots
	}
	return RobotsStore{DB: db}
}

// SharedParamRefresh is how often a worker of a shared crawl reads the
// parameter rules the others stored: the lag of a rule learned by one worker
// in the others (one HSCAN of the rules a tick).
const SharedParamRefresh = 250 * time.Millisecond

// BuildShared wires the crawl cfg describes as one worker of a shared crawl:
// as Build, but over sh, with db the worker's own data dir.
func BuildShared(cfg configs.Config, db *storage.DB, sh *Shared, env Env, logger *slog.Logger) (*Crawl, error) {
	return build(cfg, db, sh, env, logger)
}

func buildShared(eo Options, fo frontier.Options, sh *Shared, det *dedup.Detector, f *fetch.Fetcher, robots RobotsSource, logger *slog.Logger) *Crawl {
	var eng *Engine
	ready := make(chan struct{})
	fr := sh.Frontier(fo, func(host string) {
		<-ready
		eng.groupHost(host)
	})
	if sh.MirrorLog == nil {
		eo.Mirror = nil
	}
	eng = NewShared(eo, sh.Store, fr, f, robots, det, sh.Index(det), logger.With("system", "crawl"))
	eng.shared = true
	if mr, ok := eng.mirror.(*mirrorRules); ok {
		mr.log, mr.worker = sh.MirrorLog, newWorkerTag()
	}
	close(ready)
	return &Crawl{Engine: eng, Queues: fr, Fetcher: f}
}

// groupHost groups host by IP (a host another worker queued: the frontier
// holds it until then), even when the engine grouped it before.
func (e *Engine) groupHost(host string) {
	e.hostMu.Lock()
	e.hostsSeen[host] = true
	e.hostMu.Unlock()
	e.politeKey(host)
}
