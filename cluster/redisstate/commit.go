package redisstate

import (
	"context"

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
// The lease ends under the lease m holds on the item's partition now
// (Batch.Done).
func (c *Crawl) Commit(ctx context.Context, m *Member, ids *IDs, it *frontier.Item, raw string, links []frontier.Item) (added []bool, err error) {
	return c.commitUnder(ctx, m, ids, it, m.epochOf(c.PartitionOf(it.Host)), raw, links)
}

// commitUnder is Commit under the lease epoch the item was popped under.
func (c *Crawl) commitUnder(ctx context.Context, m *Member, ids *IDs, it *frontier.Item, epoch int64, raw string, links []frontier.Item) (added []bool, err error) {
	b := c.NewBatch(ids)
	b.Enqueue(links...)
	b.doneUnder(m, epoch, it.Host, raw)
	if added, err = b.Commit(ctx); err != nil {
		return nil, err
	}
	copy(links, b.Items())
	return added, nil
}
