package redisstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// The seen-set: 64-bit fingerprints of canonical URLs (xxhash64), kept in the
// partition of the URL's host, in seenBuckets hashes per partition. The top
// bits of a fingerprint pick the bucket, its low 48 bits are the field (6
// bytes), the value is the page id. Two URLs of one partition are taken for
// one when their fingerprints agree on 48 + log2(seenBuckets) bits: about
// n^2/2^(49+b) URLs over a partition of n (docs/SCALE.md).

// Fingerprint is a URL's 64-bit fingerprint.
func Fingerprint(u string) uint64 { return xxhash.Sum64String(u) }

// PartitionOf is the partition of a host key (frontier.HostKey).
func (c *Crawl) PartitionOf(host string) int {
	return int(xxhash.Sum64String(host) % uint64(c.partitions))
}

// seenSlot returns the bucket key and field of URL u (host its HostKey).
func (c *Crawl) seenSlot(host, u string) (key, field string) {
	fp := Fingerprint(u)
	b := 0
	if c.seenBuckets > 1 {
		b = int(fp >> (64 - bits.Len(uint(c.seenBuckets-1))))
	}
	var f [6]byte
	binary.BigEndian.PutUint16(f[:2], uint16(fp>>32))
	binary.BigEndian.PutUint32(f[2:], uint32(fp))
	return c.partTag(c.PartitionOf(host)) + "s:" + strconv.Itoa(b), string(f[:])
}

func (c *Crawl) queueKey(p int, host string) string { return c.partTag(p) + "q:" + host }
func (c *Crawl) hostsKey(p int) string              { return c.partTag(p) + "hosts" } // the scripts derive queueCountKey from it

// queueCountKey is the count of the items queued in partition p, kept by
// every script that pushes or pops (crawls of layout 2: queueCounts).
func (c *Crawl) queueCountKey(p int) string { return c.partTag(p) + "n" }

// IDs hands out crawl-wide page ids: blocks of the crawl's id counter, and ids
// given back (a URL found seen after all keeps the id it had) first.
type IDs struct {
	c         *Crawl
	mu        sync.Mutex
	next, end uint64
	free      []uint64
}

// idBlock is how many ids one INCRBY reserves.
const idBlock = 1024

// NewIDs returns an id allocator of the crawl.
func (c *Crawl) NewIDs() *IDs { return &IDs{c: c} }

// Next returns an unused page id.
func (a *IDs) Next(ctx context.Context) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.free); n > 0 {
		id := a.free[n-1]
		a.free = a.free[:n-1]
		return id, nil
	}
	if a.next == a.end {
		end, err := a.c.rdb.IncrBy(ctx, a.c.idsKey(), idBlock).Result()
		if err != nil {
			return 0, wrap("allocate ids", err)
		}
		a.next, a.end = uint64(end)-idBlock+1, uint64(end)+1
	}
	id := a.next
	a.next++
	return id, nil
}

// Put gives back an id that was not used.
func (a *IDs) Put(id uint64) {
	a.mu.Lock()
	a.free = append(a.free, id)
	a.mu.Unlock()
}

// Enqueue marks each item's URL seen and queues it, atomically per URL (one
// script call per partition the items fall in), all in one pipeline: one
// round trip for a page's links. Items get
// a fresh id from ids; added[i] reports whether items[i] was queued, and an
// item that was seen before gets its URL's existing id instead. items[i].Host
// is filled in (frontier.HostKey) when empty.
func (c *Crawl) Enqueue(ctx context.Context, ids *IDs, items []frontier.Item) (added []bool, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	for i := range items {
		if items[i].Host == "" {
			items[i].Host = frontier.HostKey(items[i].URL)
		}
		if items[i].ID, err = ids.Next(ctx); err != nil {
			return nil, err
		}
	}
	// On an error the ids are not given back: a script whose reply was lost
	// may have stored its id.
	var order [][]int
	cmds, err := c.pipelined(ctx, "enqueue", func(p redis.Pipeliner) { order = c.enqueueCmds(ctx, p, items) })
	if err != nil {
		return nil, err
	}
	return c.enqueued(ids, items, order, cmds)
}

// enqueueCmds adds to p one enqueueScript call per partition that items
// fall in; order gives, for each call, the indexes of its items.
func (c *Crawl) enqueueCmds(ctx context.Context, p redis.Pipeliner, items []frontier.Item) (order [][]int) {
	byPart := map[int]int{} // partition -> index in order
	for i := range items {
		part := c.PartitionOf(items[i].Host)
		j, ok := byPart[part]
		if !ok {
			j = len(order)
			byPart[part] = j
			order = append(order, nil)
		}
		order[j] = append(order[j], i)
	}
	for _, idx := range order {
		part := c.PartitionOf(items[idx[0]].Host)
		keys := make([]string, 0, 1+2*len(idx))
		args := make([]any, 0, 4*len(idx))
		keys = append(keys, c.hostsKey(part))
		for _, i := range idx {
			it := &items[i]
			key, field := c.seenSlot(it.Host, it.URL)
			keys = append(keys, key, c.queueKey(part, it.Host))
			args = append(args, field, it.ID, EncodeItem(it), it.Host)
		}
		enqueueScript.EvalSha(ctx, p, keys, args...)
	}
	return order
}

// enqueued reads enqueueCmds' replies (cmds: one per partition of order).
func (c *Crawl) enqueued(ids *IDs, items []frontier.Item, order [][]int, cmds []redis.Cmder) ([]bool, error) {
	added := make([]bool, len(items))
	for j, cmd := range cmds {
		v, err := cmd.(*redis.Cmd).Slice()
		if err != nil {
			return nil, err
		}
		if len(v) != 2*len(order[j]) {
			return nil, fmt.Errorf("redisstate: enqueue: %d replies for %d URLs", len(v)/2, len(order[j]))
		}
		for k, i := range order[j] {
			isNew := v[2*k] == int64(1)
			id, err := strconv.ParseUint(fmt.Sprint(v[2*k+1]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("redisstate: enqueue %s: bad id %v", items[i].URL, v[2*k+1])
			}
			if !isNew {
				ids.Put(items[i].ID)
				items[i].ID = id
			}
			added[i] = isNew
		}
	}
	return added, nil
}

// Mark marks URLs seen under fresh ids (without queueing them); ids[i] is
// urls[i]'s id, fresh[i] whether this call marked it. One round trip.
func (c *Crawl) Mark(ctx context.Context, alloc *IDs, urls []string) (ids []uint64, fresh []bool, err error) {
	ids = make([]uint64, len(urls))
	for i := range urls {
		if ids[i], err = alloc.Next(ctx); err != nil {
			return nil, nil, err
		}
	}
	cmds, err := c.pipelined(ctx, "mark seen", func(p redis.Pipeliner) {
		for i, u := range urls {
			key, field := c.seenSlot(frontier.HostKey(u), u)
			markScript.EvalSha(ctx, p, []string{key}, field, ids[i])
		}
	})
	if err != nil { // ids not given back: see Enqueue
		return nil, nil, err
	}
	fresh = make([]bool, len(urls))
	for i, cmd := range cmds {
		isNew, id, err := pairResult(cmd.(*redis.Cmd))
		if err != nil {
			return nil, nil, err
		}
		if !isNew {
			alloc.Put(ids[i])
			ids[i] = id
		}
		fresh[i] = isNew
	}
	return ids, fresh, nil
}

// Seen looks URLs up: ids[i] is urls[i]'s page id, 0 when it was not seen.
// One round trip.
func (c *Crawl) Seen(ctx context.Context, urls []string) ([]uint64, error) {
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, u := range urls {
			key, field := c.seenSlot(frontier.HostKey(u), u)
			p.HGet(ctx, key, field)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap("seen", err)
	}
	ids := make([]uint64, len(urls))
	for i, cmd := range cmds {
		s, err := cmd.(*redis.StringCmd).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, wrap("seen", err)
		}
		if ids[i], err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, fmt.Errorf("redisstate: seen-set value %q of %s: %w", s, urls[i], err)
		}
	}
	return ids, nil
}

// pairResult reads a script's {flag, id} reply.
func pairResult(cmd *redis.Cmd) (bool, uint64, error) {
	v, err := cmd.Slice()
	if err != nil {
		return false, 0, err
	}
	if len(v) != 2 {
		return false, 0, fmt.Errorf("unexpected reply %v", v)
	}
	flag, _ := v[0].(int64)
	id, err := strconv.ParseUint(fmt.Sprint(v[1]), 10, 64)
	return flag == 1, id, err
}

// EncodeItem is the queue's form of an item: a version byte, then id, depth,
// hops, tries and flags (bit 0 Verify, the rest the Sitemap level) as uvarints, then URL, Via and FetchURL, each length
// prefixed. The host is not stored (it is the queue's).
func EncodeItem(it *frontier.Item) string {
	b := make([]byte, 0, 16+len(it.URL)+len(it.Via)+len(it.FetchURL))
	b = append(b, 1)
	var flags uint64
	if it.Verify {
		flags |= 1
	}
	flags |= uint64(max(it.Sitemap, 0)) << 1 // a sitemap's nesting level
	for _, v := range []uint64{it.ID, uint64(it.Depth), uint64(it.Hops), uint64(it.Tries), flags} {
		b = binary.AppendUvarint(b, v)
	}
	for _, s := range []string{it.URL, it.Via, it.FetchURL} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return string(b)
}

// DecodeItem reads EncodeItem's form; host is the queue's host.
func DecodeItem(s, host string) (frontier.Item, error) {
	b := []byte(s)
	if len(b) == 0 || b[0] != 1 {
		return frontier.Item{}, fmt.Errorf("redisstate: queue item of unknown version")
	}
	b = b[1:]
	var nums [5]uint64
	for i := range nums {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return frontier.Item{}, fmt.Errorf("redisstate: queue item cut short")
		}
		nums[i], b = v, b[n:]
	}
	var strs [3]string
	for i := range strs {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return frontier.Item{}, fmt.Errorf("redisstate: queue item cut short")
		}
		strs[i], b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	return frontier.Item{ID: nums[0], Depth: int(nums[1]), Hops: int(nums[2]), Tries: int(nums[3]),
		Verify: nums[4]&1 != 0, Sitemap: int(min(nums[4]>>1, 1<<16)), URL: strs[0], Via: strs[1], FetchURL: strs[2], Host: host}, nil
}
