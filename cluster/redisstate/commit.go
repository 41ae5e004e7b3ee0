package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Commit records a page's outcome in the shared state: its links are marked
// seen and queued (Enqueue) and the lease of its item (raw, as Pop returned
// it) ends. Against one Redis server it is one round trip, a MULTI/EXEC
// transaction: all of it or nothing. Redis refuses the whole transaction when
// it is over maxmemory (the scripts are flagged as writes, so the refusal
// comes when they are queued); every command in it is a script, so when
// Redis lost its scripts (a restart) every one fails alike, and Commit loads
// them and runs the transaction again. Against a Cluster (the links' keys are
// in many slots) it is two round trips: the links, then, only if they all
// went through, the end of the lease. Either way a crash in between leaves
// the item in flight, to be fetched again by the partition's next holder; its
// links are then found seen.
func (c *Crawl) Commit(ctx context.Context, m *Member, ids *IDs, it *frontier.Item, raw string, links []frontier.Item) (added []bool, err error) {
	for i := range links {
		if links[i].Host == "" {
			links[i].Host = frontier.HostKey(links[i].URL)
		}
		if links[i].ID, err = ids.Next(ctx); err != nil {
			return nil, err
		}
	}
	done := func(p redis.Pipeliner) {
		doneScript.EvalSha(ctx, p, []string{c.inflightKey(c.PartitionOf(it.Host))}, raw)
	}
	if _, cluster := c.rdb.(*redis.ClusterClient); cluster {
		var order [][]int
		cmds, err := c.pipelined(ctx, "commit", func(p redis.Pipeliner) { order = c.enqueueCmds(ctx, p, links) })
		if err != nil {
			return nil, err
		}
		if added, err = c.enqueued(ids, links, order, cmds); err != nil {
			return nil, err
		}
		if _, err := c.pipelined(ctx, "done", done); err != nil {
			return nil, err
		}
	} else if added, err = c.enqueuedAfter(ctx, ids, links, done); err != nil {
		return nil, err
	}
	m.Finished(it.Host)
	return added, nil
}

// enqueuedAfter runs links' enqueue scripts and then tail in one MULTI/EXEC
// transaction, loading the scripts once if Redis lost them.
func (c *Crawl) enqueuedAfter(ctx context.Context, ids *IDs, links []frontier.Item, tail func(redis.Pipeliner)) ([]bool, error) {
	for attempt := 0; ; attempt++ {
		var order [][]int
		cmds, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			order = c.enqueueCmds(ctx, p, links)
			tail(p)
			return nil
		})
		// A refused transaction (EXECABORT) says why in its commands'
		// errors (OOM when queued).
		if cerr := firstErr(cmds); cerr != nil {
			err = cerr
		}
		if isNoScript(err) && attempt == 0 {
			if err := loadScripts(ctx, c.rdb); err != nil {
				return nil, wrap("commit", err)
			}
			continue
		}
		if err != nil {
			return nil, wrap("commit", err)
		}
		return c.enqueued(ids, links, order, cmds[:len(order)])
	}
}
