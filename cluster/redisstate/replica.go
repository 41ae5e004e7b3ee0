package redisstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The workers' simhash replicas. The simhash index is not shared (a search
// flips bits of the query: many lookups a page, too many round trips); each
// worker keeps its own, fed from the stream of new unique pages that the
// check-and-add script appends to (capped at DedupOptions.StreamLen entries),
// and rebuilt from the page records when it starts or falls behind the cap.

// ErrReplicaGap means the stream was trimmed past entries a follower had not
// read: the replica must be rebuilt (ForEachIndexed) and follow from "$".
var ErrReplicaGap = errors.New("redisstate: the new-page stream was trimmed past the replica: rebuild it")

// NewPage is one entry of the new-page stream.
type NewPage struct {
	ID, Simhash uint64
	Slot        uint64    // the index's number of the page: 1, 2, ... in the stream's order
	Added       time.Time // Redis's clock when the page was added (the entry's id)
	Entry       string    // the stream entry id
}

// FollowNewPages calls fn with every page added after the stream position
// from ("0": from the first page indexed; "$": from now on), in order,
// waiting for new ones until ctx ends (then it returns ctx's error). Pages are
// numbered without gaps (their slots, taken in the same script as the
// entry), so a follower knows exactly when the stream's cap trimmed pages it
// had not read: it returns ErrReplicaGap.
func (c *Crawl) FollowNewPages(ctx context.Context, from string, fn func(NewPage)) error {
	after, next := "0-0", uint64(1) // the entry read last, the slot expected next
	if from == "$" {
		last, err := c.rdb.XRevRangeN(ctx, c.streamKey(), "+", "-", 1).Result()
		if err != nil {
			return wrap("follow new pages", err)
		}
		if len(last) == 1 {
			np, err := parseNewPage(last[0])
			if err != nil {
				return err
			}
			after, next = np.Entry, np.Slot+1
		}
	}
	for {
		res, err := c.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{c.streamKey(), after}, Count: 1000, Block: time.Second}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return wrap("follow new pages", err)
		}
		for _, st := range res {
			for _, m := range st.Messages {
				np, err := parseNewPage(m)
				if err != nil {
					return err
				}
				if np.Slot != next {
					return fmt.Errorf("%w (page %d expected, %d read)", ErrReplicaGap, next, np.Slot)
				}
				fn(np)
				after, next = m.ID, next+1
			}
		}
	}
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

// parseNewPage reads an entry "slot id simhash(8 bytes)".
func parseNewPage(m redis.XMessage) (NewPage, error) {
	r, _ := m.Values["r"].(string)
	bad := fmt.Errorf("redisstate: new-page entry %s: bad value", m.ID)
	slot, rest, ok := strings.Cut(r, " ")
	if !ok {
		return NewPage{}, bad
	}
	id, sh, ok := strings.Cut(rest, " ")
	if !ok || len(sh) != 8 {
		return NewPage{}, bad
	}
	np := NewPage{Simhash: binary.BigEndian.Uint64([]byte(sh)), Entry: m.ID}
	var err1, err2 error
	np.Slot, err1 = strconv.ParseUint(slot, 10, 64)
	np.ID, err2 = strconv.ParseUint(id, 10, 64)
	if err1 != nil || err2 != nil {
		return NewPage{}, bad
	}
	ms, _ := splitID(m.ID)
	np.Added = time.UnixMilli(int64(ms))
	return np, nil
}

// ForEachIndexed calls fn with every page of the duplicate index (id,
// simhash), bucket by bucket: a replica's rebuild. Pages added meanwhile may
// or may not be seen: follow the stream from an entry taken before.
func (c *Crawl) ForEachIndexed(ctx context.Context, fn func(id, simhash uint64) error) error {
	for b := 0; b < c.recordBkts; b++ {
		key := c.recordPrefix() + strconv.Itoa(b)
		var cursor uint64
		for {
			kv, next, err := c.rdb.HScan(ctx, key, cursor, "", 512).Result()
			if err != nil {
				return wrap("index records", err)
			}
			for i := 0; i+1 < len(kv); i += 2 {
				var cd Candidate
				if err := decodeRecord(kv[i+1], &cd); err != nil {
					return err
				}
				if err := fn(cd.ID, cd.Simhash); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}
