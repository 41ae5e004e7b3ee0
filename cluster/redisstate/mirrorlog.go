package redisstate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/crawl"
)

// The crawl's mirror log (crawl.MirrorLog, docs/SCALE.md): a stream,
// hs:{C/e}:mirror-log, one entry per page that holds mirror evidence,
// appended by the page's commit script (so an entry exists exactly when its
// page was committed) and read by every worker in the stream's order.

// MirrorLogCap is about the number of entries the log keeps (XADD MAXLEN ~): a
// worker that joins after more were written rebuilds its detector from the
// candidates stored as evidence instead of replaying the log.
var MirrorLogCap = 1_000_000

func (c *Crawl) mirrorLogKey() string { return c.evidenceKey("mirror-log") }

var _ crawl.MirrorAppender = (*seamTx)(nil)

// AppendMirror appends data to the mirror log in the transaction's commit.
func (t *seamTx) AppendMirror(data []byte) error {
	t.put('X', t.s.c.mirrorLogKey(), strconv.Itoa(MirrorLogCap), string(data))
	return nil
}

// MirrorLog is the crawl's mirror log, read through c.
type MirrorLog struct {
	c     *Crawl
	Pause time.Duration // between tries while Redis is unavailable (default 1 s)
}

var _ crawl.MirrorLog = (*MirrorLog)(nil)

// MirrorLog returns the crawl's mirror log.
func (c *Crawl) MirrorLog() *MirrorLog { return &MirrorLog{c: c, Pause: time.Second} }

// Replay reads every entry the log holds now (crawl.MirrorLog).
func (l *MirrorLog) Replay(ctx context.Context, fn func(crawl.MirrorEntry) error) (string, error) {
	info, err := l.c.rdb.XInfoStream(ctx, l.c.mirrorLogKey()).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return "", nil
		}
		return "", wrap("mirror log", err)
	}
	last := info.LastGeneratedID
	if info.EntriesAdded > info.Length {
		return last, crawl.ErrMirrorLogTrimmed
	}
	from := "-"
	for {
		msgs, err := l.c.rdb.XRangeN(ctx, l.c.mirrorLogKey(), from, last, 1000).Result()
		if err != nil {
			return "", wrap("mirror log", err)
		}
		for _, m := range msgs {
			if err := fn(mirrorEntry(m)); err != nil {
				return "", err
			}
		}
		if len(msgs) < 1000 {
			return last, nil
		}
		from = "(" + msgs[len(msgs)-1].ID
	}
}

// isNoSuchKey reports XINFO's error for a stream that does not exist yet.
func isNoSuchKey(err error) bool {
	return err != nil && (err.Error() == "ERR no such key" || errors.Is(err, redis.Nil))
}

// Follow calls fn with the entries after pos, in order, as many at a time
// as one read returns (up to 1,000), until ctx ends (crawl.MirrorLog). Redis being unavailable pauses it (retried every
// Pause); an entry trimmed before it was read is an error (the log's cap is
// far beyond what a live worker falls behind).
func (l *MirrorLog) Follow(ctx context.Context, pos string, fn func([]crawl.MirrorEntry) error) error {
	if pos == "" {
		pos = "0-0"
	}
	for {
		res, err := l.c.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{l.c.mirrorLogKey(), pos}, Count: 1000, Block: time.Second}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := wrap("mirror log", err); errors.Is(err, ErrUnavailable) {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(l.Pause):
				}
				continue
			}
			return wrap("mirror log", err)
		}
		for _, st := range res {
			if len(st.Messages) == 0 {
				continue
			}
			ens := make([]crawl.MirrorEntry, len(st.Messages))
			for i, m := range st.Messages {
				ens[i] = mirrorEntry(m)
			}
			if err := fn(ens); err != nil {
				return err
			}
			pos = st.Messages[len(st.Messages)-1].ID
		}
	}
}

func mirrorEntry(m redis.XMessage) crawl.MirrorEntry {
	v, _ := m.Values["e"].(string)
	ms, _ := splitID(m.ID)
	return crawl.MirrorEntry{Pos: m.ID, At: time.UnixMilli(int64(ms)), Data: []byte(v)}
}

// Size returns the log's entries and the memory Redis gives it (MEMORY
// USAGE, every entry counted).
func (l *MirrorLog) Size(ctx context.Context) (entries, bytes int64, err error) {
	entries, err = l.c.rdb.XLen(ctx, l.c.mirrorLogKey()).Result()
	if err != nil {
		return 0, 0, wrap("mirror log", err)
	}
	bytes, err = l.c.rdb.MemoryUsage(ctx, l.c.mirrorLogKey(), 0).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, wrap("mirror log", err)
	}
	return entries, bytes, nil
}
