package redisstate

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The duplicate index, in one slot (hash tag {C/d}) so that one script checks
// and adds atomically:
//
//	x:<b>  exact fingerprint -> page id      field: low 48 bits (6 bytes)
//	k:<b>  supershingle key -> page ids      field: 24 key bits below the bucket bits (3 bytes); value "id,id,..."
//	g:<b>  page id -> record                 record: one byte per sketch sample, then the simhash (8 bytes)
//	n      stream of new unique pages (id, simhash), capped: the feed of the workers' simhash replicas
//
// Of two workers racing with copies of one page, the script runs for one
// first: it adds its page; the other then finds the first as an exact
// duplicate or as a supershingle candidate. Candidates are returned, not
// decided: the caller settles them (sketch estimate, or its exact rule) and
// calls again with them as considered; the page is added only by a call that
// finds no candidate it has not considered, so a near duplicate added by
// another worker between two calls is always seen.

// Samples stored per page: one byte of each sketch sample. Two unequal
// samples agree on their low byte with probability 1/256, which raises an
// estimate of J by (1-J)/256 (0.0006 at J = 0.85).
const recordSamples = 84

// recordSize is a page record's length: recordSamples bytes and the simhash.
const recordSize = recordSamples + 8

// IndexPage is what the duplicate index keeps of a unique page.
type IndexPage struct {
	ID      uint64
	Exact   uint64   // dedup.Signature.Exact
	Keys    []uint64 // supershingle subset keys (dedup's comboKey of each subset)
	Sketch  []uint64 // dedup.Signature.Sketch
	Simhash uint64
}

// Candidate is an indexed page that shares a supershingle key with the page
// checked: its sketch bytes and simhash, for the caller to settle.
type Candidate struct {
	ID      uint64
	Sketch  []byte // the low byte of each sample
	Simhash uint64
}

// Estimate is the fraction of sketch samples that agree on their low byte.
func (cd Candidate) Estimate(sketch []uint64) float64 {
	n := min(len(sketch), len(cd.Sketch))
	if n == 0 {
		return 0
	}
	eq := 0
	for i := 0; i < n; i++ {
		if byte(sketch[i]) == cd.Sketch[i] {
			eq++
		}
	}
	return float64(eq) / float64(n)
}

// Result is one check-and-add's outcome: Added, or an exact duplicate of
// Exact, or Candidates to settle (nothing added).
type Result struct {
	Added      bool
	Exact      uint64
	Candidates []Candidate
}

// DedupOptions bound the index's script.
type DedupOptions struct {
	MaxCandidates int   // candidates returned per call (default 16)
	StreamLen     int64 // entries kept in the new-page stream (default 100000; <0 = no stream)
}

func (o DedupOptions) withDefaults() DedupOptions {
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = 16
	}
	if o.StreamLen == 0 {
		o.StreamLen = 100_000
	}
	return o
}

func bucketBits(n int) uint { return uint(bits.Len(uint(n - 1))) }

func (c *Crawl) exactSlot(fp uint64) (string, string) {
	b := uint64(0)
	if c.exactBkts > 1 {
		b = fp >> (64 - bucketBits(c.exactBkts))
	}
	var f [6]byte
	binary.BigEndian.PutUint16(f[:2], uint16(fp>>32))
	binary.BigEndian.PutUint32(f[2:], uint32(fp))
	return c.dedupTag() + "x:" + strconv.FormatUint(b, 10), string(f[:])
}

func (c *Crawl) superSlot(k uint64) (string, string) {
	bb := bucketBits(c.superBkts)
	b := uint64(0)
	if bb > 0 {
		b = k >> (64 - bb)
	}
	v := k >> (64 - bb - 24)
	f := [3]byte{byte(v >> 16), byte(v >> 8), byte(v)}
	return c.dedupTag() + "k:" + strconv.FormatUint(b, 10), string(f[:])
}

func (c *Crawl) recordPrefix() string { return c.dedupTag() + "g:" }
func (c *Crawl) recordKey(id uint64) string {
	return c.recordPrefix() + strconv.FormatUint(id&uint64(c.recordBkts-1), 10)
}
func (c *Crawl) streamKey() string { return c.dedupTag() + "n" }

func encodeRecord(pg *IndexPage) string {
	var r [recordSize]byte
	for i := 0; i < recordSamples && i < len(pg.Sketch); i++ {
		r[i] = byte(pg.Sketch[i])
	}
	binary.BigEndian.PutUint64(r[recordSamples:], pg.Simhash)
	return string(r[:])
}

// CheckAndAdd checks pg against the index and adds it when it finds neither
// an exact duplicate nor a supershingle candidate outside considered (ids the
// caller has settled already as not duplicates). One round trip.
func (c *Crawl) CheckAndAdd(ctx context.Context, pg *IndexPage, considered []uint64, o DedupOptions) (Result, error) {
	o = o.withDefaults()
	ek, ef := c.exactSlot(pg.Exact)
	keys := make([]string, 0, 3+len(pg.Keys))
	keys = append(keys, ek, c.recordKey(pg.ID), c.streamKey())
	args := make([]any, 0, 8+len(pg.Keys))
	var cons strings.Builder
	cons.WriteByte(',')
	for _, id := range considered {
		cons.WriteString(strconv.FormatUint(id, 10))
		cons.WriteByte(',')
	}
	args = append(args, ef, pg.ID, encodeRecord(pg), c.recordPrefix(), c.recordBkts-1, o.MaxCandidates,
		max(o.StreamLen, 0), cons.String())
	for _, k := range pg.Keys {
		sk, sf := c.superSlot(k)
		keys = append(keys, sk)
		args = append(args, sf)
	}
	v, err := c.run(ctx, "check-and-add", checkAndAddScript, keys, args...)
	if err != nil {
		return Result{}, err
	}
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return Result{}, fmt.Errorf("redisstate: check-and-add: unexpected reply %v", v)
	}
	switch reply[0] {
	case int64(0):
		return Result{Added: true}, nil
	case int64(1):
		orig, err := strconv.ParseUint(fmt.Sprint(reply[1]), 10, 64)
		if err != nil {
			return Result{}, fmt.Errorf("redisstate: check-and-add: bad id %v", reply[1])
		}
		if orig == pg.ID { // a retried call whose first run added the page
			return Result{Added: true}, nil
		}
		return Result{Exact: orig}, nil
	}
	var r Result
	for i := 1; i+1 < len(reply); i += 2 {
		id, err := strconv.ParseUint(fmt.Sprint(reply[i]), 10, 64)
		if err != nil {
			return Result{}, fmt.Errorf("redisstate: check-and-add: bad candidate id %v", reply[i])
		}
		if id == pg.ID {
			// A retried call whose first run added the page finds it
			// through its own keys (its exact fingerprint matched
			// first, unless another page has the same one).
			continue
		}
		rec, _ := reply[i+1].(string)
		cd := Candidate{ID: id}
		if len(rec) == recordSize {
			cd.Sketch = []byte(rec[:recordSamples])
			cd.Simhash = binary.BigEndian.Uint64([]byte(rec[recordSamples:]))
		}
		r.Candidates = append(r.Candidates, cd)
	}
	if len(r.Candidates) == 0 {
		return Result{Added: true}, nil
	}
	return r, nil
}

// Settle decides a candidate batch: it returns the original the page
// duplicates (ok), or false when none of them is one.
type Settle func(cands []Candidate) (original uint64, ok bool)

// Decide runs CheckAndAdd until the page is added or found a duplicate,
// settling candidates with settle: near reports a near duplicate (and its
// original), exact an exact one; both false means pg was added. It gives up
// (an error) after maxRounds calls, each of which found new candidates.
func (c *Crawl) Decide(ctx context.Context, pg *IndexPage, settle Settle, o DedupOptions) (exact, near bool, original uint64, err error) {
	var considered []uint64
	const maxRounds = 8
	for round := 0; round < maxRounds; round++ {
		r, err := c.CheckAndAdd(ctx, pg, considered, o)
		if err != nil {
			return false, false, 0, err
		}
		switch {
		case r.Added:
			return false, false, 0, nil
		case r.Exact != 0:
			return true, false, r.Exact, nil
		}
		if orig, ok := settle(r.Candidates); ok {
			return false, true, orig, nil
		}
		for _, cd := range r.Candidates {
			considered = append(considered, cd.ID)
		}
	}
	return false, false, 0, fmt.Errorf("redisstate: page %d: new candidates in each of %d rounds", pg.ID, maxRounds)
}

// NewPages reads the new-page stream after the entry id after ("0" for the
// start, "$" for only new ones), up to count entries: the pages' ids and
// simhashes, for a worker's simhash replica, and the last entry's id.
func (c *Crawl) NewPages(ctx context.Context, after string, count int64) (ids, simhashes []uint64, last string, err error) {
	res, err := c.rdb.XRangeN(ctx, c.streamKey(), "("+after, "+", count).Result()
	if after == "0" {
		res, err = c.rdb.XRangeN(ctx, c.streamKey(), "-", "+", count).Result()
	}
	if err != nil {
		return nil, nil, after, wrap("new pages", err)
	}
	last = after
	for _, m := range res {
		var id, sh uint64
		r, _ := m.Values["r"].(string)
		if i := strings.IndexByte(r, ' '); i > 0 && len(r) == i+9 {
			id, _ = strconv.ParseUint(r[:i], 10, 64)
			sh = binary.BigEndian.Uint64([]byte(r[i+1:]))
		}
		ids, simhashes, last = append(ids, id), append(simhashes, sh), m.ID
	}
	return ids, simhashes, last, nil
}

var _ = redis.Nil
