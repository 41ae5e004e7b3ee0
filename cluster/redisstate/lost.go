package redisstate

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Lost state. A Redis restarted without persistence, a FLUSHALL, an
// eviction or a key deleted or overwritten by hand leaves the crawl's keys
// empty or gone, which the workers would otherwise read as a crawl with
// nothing left to do. So a crawl has a generation: a random token made when
// it is created, kept in its meta hash and in a marker key of every
// partition (genKey). A partition is taken (acquireScript) only while its
// marker holds the crawl's generation, and pops need the partition's lease,
// which a loss takes with it: nothing is popped from lost state. The
// heartbeat reads the meta hash's generation in its transaction, the store's
// commit checks the marker of every partition it writes, and the check that
// the crawl is done reads every marker and the partitions' counts of queued
// items, which must be 0 when the queues are empty. Each of these finds a
// loss as a *LostError (errors.Is(err, ErrLost)) naming what was lost; the
// worker's frontier then returns it from Next, and the engine stops with it
// (the crawl is not complete). A queue that is not a list and an item that
// does not decode are reported the same way.

// ErrLost is what every *LostError is (errors.Is).
var ErrLost = errors.New("shared crawl state lost")

// LostError is shared state that is gone or damaged: What says which.
type LostError struct {
	Crawl string
	What  string
	Fix   string // how to go on, when the damage can be mended ("": the crawl cannot go on)
}

func (e *LostError) Error() string {
	if e.Fix != "" {
		return fmt.Sprintf("redisstate: the shared state of crawl %q in Redis is damaged: %s. The crawl stops here, not complete; %s",
			e.Crawl, e.What, e.Fix)
	}
	return fmt.Sprintf("redisstate: the shared state of crawl %q in Redis is lost or damaged: %s. "+
		"The crawl cannot go on from it and is not complete. The pages fetched so far, with their links, are in the workers' data dirs "+
		"(crawler report and export read them, --data once per dir); resuming the crawl from them is not built yet. "+
		"To crawl again, delete the crawl's keys (those matching 'hs:{%s}*' and 'hs:{%s/*': redis-cli --scan --pattern PATTERN | xargs redis-cli del) "+
		"or choose a new --crawl name, give each worker a new data dir, and run Redis with persistence (appendonly yes) so that a restart keeps the state",
		e.Crawl, e.What, e.Crawl, e.Crawl)
}

func (e *LostError) Is(target error) bool { return target == ErrLost }

// lost is a *LostError of c.
func (c *Crawl) lost(format string, args ...any) *LostError {
	return &LostError{Crawl: c.name, What: fmt.Sprintf(format, args...)}
}

// genKey is partition p's marker: the crawl's generation.
func (c *Crawl) genKey(p int) string { return c.partTag(p) + "gen" }

// newGen is a new crawl's generation.
func newGen() string { return rand.Text() }

// lostReply is what a script's LOST error reply names ("" and false when err
// is not one).
func lostReply(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	i := strings.Index(msg, "LOST ")
	if i < 0 {
		return "", false
	}
	return msg[i+len("LOST "):], true
}

// openScript creates a crawl's meta hash (each field unless set) and
// returns it, unless the meta hash is gone while other keys of the crawl
// remain: then the crawl's state was lost (a LOST error naming the key
// found), and a new layout must not be made over what is left of the old.
// KEYS: meta, then the crawl-wide keys that outlive a crawl's start (page
// ids, workers' records, heartbeats). ARGV: field, value pairs.
var openScript = redis.NewScript(`#!lua
if redis.call('EXISTS', KEYS[1]) == 0 then
  for i = 2, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then return redis.error_reply('LOST ' .. KEYS[i]) end
  end
end
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i+1]) end
return redis.call('HGETALL', KEYS[1])
`)

// markPartitions writes every partition's marker (unless set: every worker
// that opens the crawl before it is ready writes the same value) and then
// marks the crawl ready in its meta hash: from then on a marker that is
// missing or different is lost state.
func (c *Crawl) markPartitions(ctx context.Context) error {
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < c.partitions; i++ {
			p.SetNX(ctx, c.genKey(i), c.gen, 0)
		}
		return nil
	})
	if err != nil {
		return wrap("open crawl", err)
	}
	return wrap("open crawl", c.rdb.HSet(ctx, c.metaKey(), "ready", "1").Err())
}

// checkGen reads the generation of the crawl's meta hash (an HGET queued in
// one of the caller's pipelines): a *LostError when it is not the crawl's.
func (c *Crawl) checkGen(cmd *redis.StringCmd) error {
	v, err := cmd.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil // not an answer: the caller has the error
	}
	switch {
	case errors.Is(err, redis.Nil):
		return c.lost("its meta hash %s (or its generation) is gone", c.metaKey())
	case v != c.gen:
		return c.lost("its meta hash %s holds another crawl's generation (%s, this worker joined %s): the crawl was made again", c.metaKey(), v, c.gen)
	}
	return nil
}

// checkMarker reads partition p's marker (a GET queued in one of the
// caller's pipelines): a *LostError when it is not the crawl's generation.
func (c *Crawl) checkMarker(p int, cmd *redis.StringCmd) error {
	v, err := cmd.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil
	}
	return c.markerLost(p, v)
}

// markerLost is the *LostError of partition p whose marker holds v ("":
// none), nil when v is the crawl's generation.
func (c *Crawl) markerLost(p int, v string) error {
	switch v {
	case c.gen:
		return nil
	case "":
		return c.lost("partition %d's keys are gone (its marker %s is missing: Redis restarted without persistence, was flushed, or evicted them)", p, c.genKey(p))
	}
	return c.lost("partition %d's marker %s holds another crawl's generation (%s, this worker joined %s)", p, c.genKey(p), v, c.gen)
}

// wrongType is the *LostError of a pop whose script found a key of the
// wrong type (WRONGTYPE): it names which of keys (key, wanted type, ...)
// it is, by TYPE (one round trip, on this error only).
func (c *Crawl) wrongType(ctx context.Context, p int, keys ...string) error {
	cmds, _ := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := 0; i+1 < len(keys); i += 2 {
			pipe.Type(ctx, keys[i])
		}
		return nil
	})
	for i, cmd := range cmds {
		if t := cmd.(*redis.StatusCmd).Val(); t != "none" && t != keys[2*i+1] {
			return c.lost("%s, a key of partition %d, is a %s, not a %s: it was overwritten and what it held is lost", keys[2*i], p, t, keys[2*i+1])
		}
	}
	return c.lost("a key of partition %d is of the wrong type (WRONGTYPE): it was overwritten and what it held is lost", p)
}

// badItem is the *LostError of an item of host's queue that does not
// decode; it was put back at the head of the queue (key).
func (c *Crawl) badItem(host, key, raw string, err error) error {
	if len(raw) > 64 {
		raw = raw[:64] + "..."
	}
	return &LostError{Crawl: c.name,
		What: fmt.Sprintf("the item at the head of host %s's queue (%s) is not a queue item (%v): %q", host, key, err, raw),
		Fix:  fmt.Sprintf("it is left there: remove it (redis-cli LPOP %s) and start the workers again, which go on with the crawl", key)}
}

// partitionOfTag is the partition whose hash tag is tag (C/pN), false for
// the crawl's other tags.
func (c *Crawl) partitionOfTag(tag string) (int, bool) {
	n, ok := strings.CutPrefix(tag, c.name+"/p")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(n)
	return p, err == nil && p >= 0 && p < c.partitions
}

// markerOps are the checks (V) of the markers of the partitions ops write
// or read, one a partition, for the store's commit to run first.
func (c *Crawl) markerOps(ops []txOp) []txOp {
	var out []txOp
	seen := map[int]bool{}
	for _, op := range ops {
		if p, ok := c.partitionOfTag(hashTag(op.key)); ok && !seen[p] {
			seen[p] = true
			out = append(out, txOp{code: 'V', key: c.genKey(p), value: c.gen})
		}
	}
	return out
}

// markersLost is the *LostError of a commit whose check of markers failed:
// it reads them again to name the partition (one round trip, on this error
// only).
func (c *Crawl) markersLost(ctx context.Context, markers []txOp) error {
	cmds, _ := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, op := range markers {
			p.Get(ctx, op.key)
		}
		return nil
	})
	for i, cmd := range cmds {
		p, _ := c.partitionOfTag(hashTag(markers[i].key))
		if err := c.checkMarker(p, cmd.(*redis.StringCmd)); err != nil {
			return err
		}
	}
	return c.lost("a partition's marker did not hold the crawl's generation at the commit")
}

// claimDir records in data dir db the crawl and generation its pages are
// crawled under, or checks them: a dir of another crawl is an error (it
// was reused for a new crawl name without a word before), and a dir crawled
// under another generation of
// the same crawl (its state in Redis was lost and the crawl made again,
// from its seeds, with page ids that start again) is a *LostError; its
// pages and ids would be mixed with the new crawl's.
func (c *Crawl) claimDir(db *storage.DB) error {
	want := c.name + " " + c.gen
	b, err := db.GetMeta(storage.MetaSharedCrawl)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		if err := db.PutMeta(storage.MetaSharedCrawl, []byte(want)); err != nil {
			return fmt.Errorf("redisstate: save the data dir's crawl: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("redisstate: the data dir's crawl: %w", err)
	}
	name, gen, _ := strings.Cut(string(b), " ")
	if name != c.name {
		// Its page ids, seen set and skips are another crawl's: mixed
		// with this one's, pages would be lost or counted twice.
		return fmt.Errorf("redisstate: this data dir holds pages of shared crawl %q, not of crawl %q: give each crawl a data dir of its own (--data)", name, c.name)
	}
	if gen != c.gen {
		return c.lost("this data dir holds pages crawled under generation %s of the crawl, and Redis holds generation %s: "+
			"the crawl's state was lost and the crawl made again since", gen, c.gen)
	}
	return nil
}

// wrongTypeErr: err is Redis's WRONGTYPE, a command on a key that holds
// another type than the crawl keeps there.
func wrongTypeErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), "WRONGTYPE")
}
