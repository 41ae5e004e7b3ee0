package redisstate

import (
	"context"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// RobotsStore is a worker's robots.txt store (fetch.RobotsStore) in a shared
// crawl: the entries of the crawl in Redis, by host, under the lease of the
// host's partition (Robots, PutRobots). A host's robots.txt is fetched once
// per host and lease: while this worker holds the partition, every load
// finds the entry it saved (its process's cache is in front of it); the next
// holder of the partition (a new lease: the worker that took it over, or
// this one again) fetches it once more. What the entries cost Redis stays
// bounded by the leases held (taking a lease drops the last one's entries).
type RobotsStore struct {
	c *Crawl
	m *Member
}

var _ fetch.RobotsStore = (*RobotsStore)(nil)

// NewRobotsStore returns the robots.txt store of worker m.
func (c *Crawl) NewRobotsStore(m *Member) *RobotsStore { return &RobotsStore{c: c, m: m} }

// robotsTimeout bounds one load or save (the store's interface has no context).
const robotsTimeout = 5 * time.Second

// lease is the lease under which host key (scheme://host[:port]) is fetched:
// this worker's lease of its partition, if it holds it.
func (r *RobotsStore) lease(key string) (Lease, bool) {
	p := r.c.PartitionOf(frontier.HostKey(key + "/"))
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	l, ok := r.m.owned[p]
	return l, ok
}

// LoadRobots returns the entry of key fetched under the current lease of its
// partition, if any.
func (r *RobotsStore) LoadRobots(key string) (fetch.RobotsEntry, bool, error) {
	l, ok := r.lease(key)
	if !ok {
		return fetch.RobotsEntry{}, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), robotsTimeout)
	defer cancel()
	e, ok, err := r.c.Robots(ctx, l, key)
	if err != nil || !ok {
		return fetch.RobotsEntry{}, false, err
	}
	out := fetch.RobotsEntry{Status: e.Status, FetchedAt: e.Fetched, Err: e.Err, Incurable: e.Incurable}
	if e.Body != "" {
		out.Body = []byte(e.Body)
	}
	return out, true, nil
}

// SaveRobots keeps the entry of key under the current lease of its
// partition (nothing when this worker does not hold it).
func (r *RobotsStore) SaveRobots(key string, e fetch.RobotsEntry) error {
	l, ok := r.lease(key)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), robotsTimeout)
	defer cancel()
	return r.c.PutRobots(ctx, l, key, RobotsEntry{Status: e.Status, Body: string(e.Body), Fetched: e.FetchedAt,
		Err: e.Err, Incurable: e.Incurable})
}
