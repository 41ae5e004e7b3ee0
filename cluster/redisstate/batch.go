package redisstate

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Batch collects the shared writes of one page (what the engine's page
// transaction writes to crawl-wide state) and applies them in one round trip
// (Commit): URLs marked seen and queued, URLs queued without a mark, the end
// of a lease, crawl-wide records (mirror evidence, dependents of skipped
// copies, skip records). It is what a seam Tx over Redis buffers; reads go to
// the server at once (Seen, Dependents, SkipRecord, TakeEvidence).
//
// Against one server the batch is one MULTI/EXEC: all of it or nothing
// (refused whole over maxmemory). Its marks, queues and the lease's end are
// scripts, which fail alike when Redis lost its scripts; the batch is then
// run again after loading them, which its writes make safe (a mark finds
// the URL seen, a record is set again). Against a Cluster the writes go in
// one pipeline, the end of the lease in a second round trip after them.
type Batch struct {
	c       *Crawl
	ids     *IDs
	enqueue []frontier.Item
	push    []frontier.Item
	writes  []func(ctx context.Context, p redis.Pipeliner)
	done    func(ctx context.Context, p redis.Pipeliner) *redis.Cmd
	finish  func(left bool)
}

// NewBatch starts a batch whose new URLs take ids from ids.
func (c *Crawl) NewBatch(ids *IDs) *Batch { return &Batch{c: c, ids: ids} }

// Enqueue marks each item seen and queues it unless its URL was seen (Commit
// says which, and gives each item its id: a fresh one, or its URL's).
func (b *Batch) Enqueue(items ...frontier.Item) { b.enqueue = append(b.enqueue, items...) }

// Items returns the Enqueue'd items, ids filled in after Commit.
func (b *Batch) Items() []frontier.Item { return b.enqueue }

// Push queues it without the seen-set (a URL seen already, queued again: a
// dependent whose counterpart failed, a redirect to itself under session
// parameters).
func (b *Batch) Push(it frontier.Item) { b.push = append(b.push, it) }

// Done ends the lease of a popped item (raw as Pop returned it) of member m,
// under the lease m holds on its partition now (as Member.Done).
func (b *Batch) Done(m *Member, host, raw string) {
	b.doneUnder(m, m.epochOf(b.c.PartitionOf(host)), host, raw)
}

// doneUnder is Done under the lease epoch the item was popped under: its
// in-flight record is left when the partition was taken since (doneScript).
func (b *Batch) doneUnder(m *Member, epoch int64, host, raw string) {
	part := b.c.PartitionOf(host)
	keys := []string{b.c.inflightKey(part), b.c.epochKey(part)}
	b.done = func(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
		return doneScript.EvalSha(ctx, p, keys, raw, epoch)
	}
	b.finish = func(left bool) {
		if left {
			m.staleEnds.Add(1)
		}
		m.Finished(host)
	}
}

func (c *Crawl) evidenceKey(kind string) string { return "hs:{" + c.name + "/e}:" + kind }

// depKey is the hash of the dependents of counterpart, in its host's
// partition.
func (c *Crawl) depKey(counterpart string) string {
	return c.partTag(c.PartitionOf(frontier.HostKey(counterpart))) + "d:" + counterpart
}

// skipKey is the hash of skip records of the URLs of host's partition.
func (c *Crawl) skipKey(u string) string {
	return c.partTag(c.PartitionOf(frontier.HostKey(u))) + "k"
}

// PutEvidence sets a crawl-wide record (mirror evidence, by kind and key).
func (b *Batch) PutEvidence(kind, key string, v []byte) {
	k := b.c.evidenceKey(kind)
	b.writes = append(b.writes, func(ctx context.Context, p redis.Pipeliner) { p.HSet(ctx, k, key, v) })
}

// AddDependent records field (the engine's encoding of a dependent) under
// counterpart: queued again if the counterpart fails.
func (b *Batch) AddDependent(counterpart, field string, v []byte) {
	k := b.c.depKey(counterpart)
	b.writes = append(b.writes, func(ctx context.Context, p redis.Pipeliner) { p.HSet(ctx, k, field, v) })
}

// DeleteDependent removes field from counterpart's dependents.
func (b *Batch) DeleteDependent(counterpart, field string) {
	k := b.c.depKey(counterpart)
	b.writes = append(b.writes, func(ctx context.Context, p redis.Pipeliner) { p.HDel(ctx, k, field) })
}

// PutSkipped sets the skip record of URL u.
func (b *Batch) PutSkipped(u string, v []byte) {
	k := b.c.skipKey(u)
	b.writes = append(b.writes, func(ctx context.Context, p redis.Pipeliner) { p.HSet(ctx, k, u, v) })
}

// DeleteSkipped removes the skip record of u.
func (b *Batch) DeleteSkipped(u string) {
	k := b.c.skipKey(u)
	b.writes = append(b.writes, func(ctx context.Context, p redis.Pipeliner) { p.HDel(ctx, k, u) })
}

// Commit applies the batch; added[i] reports whether the i-th Enqueue'd item
// was queued (its ID is then fresh; else it is its URL's existing id).
func (b *Batch) Commit(ctx context.Context) (added []bool, err error) {
	c := b.c
	for i := range b.enqueue {
		if b.enqueue[i].Host == "" {
			b.enqueue[i].Host = frontier.HostKey(b.enqueue[i].URL)
		}
		if b.enqueue[i].ID, err = b.ids.Next(ctx); err != nil {
			return nil, err
		}
	}
	for i := range b.push {
		if b.push[i].Host == "" {
			b.push[i].Host = frontier.HostKey(b.push[i].URL)
		}
	}
	var order [][]int
	var done *redis.Cmd
	fill := func(p redis.Pipeliner, withDone bool) {
		order = c.enqueueCmds(ctx, p, b.enqueue)
		c.pushCmds(ctx, p, b.push)
		for _, w := range b.writes {
			w(ctx, p)
		}
		if withDone && b.done != nil {
			done = b.done(ctx, p)
		}
	}
	_, cluster := c.rdb.(*redis.ClusterClient)
	var cmds []redis.Cmder
	for attempt := 0; ; attempt++ {
		if cluster {
			cmds, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p, false); return nil })
		} else {
			cmds, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { fill(p, true); return nil })
		}
		if cerr := firstErr(cmds); cerr != nil {
			err = cerr
		}
		if isNoScript(err) && attempt == 0 {
			if err := loadScripts(ctx, c.rdb); err != nil {
				return nil, wrap("commit", err)
			}
			continue
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap("commit", err)
		}
		break
	}
	added, err = c.enqueued(b.ids, b.enqueue, order, cmds[:len(order)])
	if err != nil {
		return nil, err
	}
	if cluster && b.done != nil {
		if _, err := c.pipelined(ctx, "done", func(p redis.Pipeliner) { done = b.done(ctx, p) }); err != nil {
			return nil, err
		}
	}
	if b.finish != nil {
		b.finish(done.Val() == int64(-1))
	}
	return added, nil
}

// pushScript queues items of one partition without the seen-set.
// KEYS: the partition's host set, then per item its host's queue.
// ARGV: per item the item and its host.
var pushScript = redis.NewScript(`#!lua
for i = 0, #ARGV / 2 - 1 do
  redis.call('RPUSH', KEYS[2 + i], ARGV[1 + 2*i])
  redis.call('SADD', KEYS[1], ARGV[2 + 2*i])
end
if #ARGV > 0 then redis.call('INCRBY', string.sub(KEYS[1], 1, -6) .. 'n', #ARGV / 2) end
return #ARGV / 2
`)

func (c *Crawl) pushCmds(ctx context.Context, p redis.Pipeliner, items []frontier.Item) {
	byPart := map[int][]int{}
	var parts []int
	for i := range items {
		part := c.PartitionOf(items[i].Host)
		if _, ok := byPart[part]; !ok {
			parts = append(parts, part)
		}
		byPart[part] = append(byPart[part], i)
	}
	for _, part := range parts {
		keys := []string{c.hostsKey(part)}
		var args []any
		for _, i := range byPart[part] {
			keys = append(keys, c.queueKey(part, items[i].Host))
			args = append(args, EncodeItem(&items[i]), items[i].Host)
		}
		pushScript.EvalSha(ctx, p, keys, args...)
	}
}

// Dependents returns counterpart's dependents (field -> value).
func (c *Crawl) Dependents(ctx context.Context, counterpart string) (map[string]string, error) {
	m, err := c.rdb.HGetAll(ctx, c.depKey(counterpart)).Result()
	return m, wrap("dependents", err)
}

// SkipRecord returns u's skip record (nil when it has none).
func (c *Crawl) SkipRecord(ctx context.Context, u string) ([]byte, error) {
	v, err := c.rdb.HGet(ctx, c.skipKey(u), u).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, wrap("skip record", err)
}

// takeScript returns and deletes one field. KEYS: hash. ARGV: field.
var takeScript = redis.NewScript(`#!lua
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v
`)

// TakeEvidence returns and deletes one crawl-wide record: of two workers that
// take it, one gets it.
func (c *Crawl) TakeEvidence(ctx context.Context, kind, key string) ([]byte, bool, error) {
	v, err := takeScript.Run(ctx, c.rdb, []string{c.evidenceKey(kind)}, key).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("take evidence", err)
	}
	return []byte(v), true, nil
}

// ForEachEvidence calls fn with every record of kind.
func (c *Crawl) ForEachEvidence(ctx context.Context, kind string, fn func(key string, v []byte) error) error {
	var cursor uint64
	for {
		kv, next, err := c.rdb.HScan(ctx, c.evidenceKey(kind), cursor, "", 512).Result()
		if err != nil {
			return wrap("evidence", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if err := fn(kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
