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
//	slot   counter: the index numbers its pages 1, 2, ... (slots), so that
//	       the many references to a page are small integers whatever its id
//	x:<b>  exact fingerprint -> slot        field: low 48 bits (6 bytes)
//	k:<b>  supershingle key -> slots        field: 16 key bits below the bucket bits (2 bytes); value "slot,slot,..."
//	g:<b>  slot -> record                   record: page id (6 bytes), one byte per sketch sample, simhash (8 bytes)
//	n      stream of new unique pages (slot, id, simhash), capped: the feed of the workers' simhash replicas
//
// A supershingle field keeps 16 key bits: with 64 to 128 keys per bucket a
// lookup finds an unrelated page with probability up to 128/65536, so up to
// 2.3% of pages get one false candidate through their 12 band keys (one alone
// makes a candidate; Bing's 15 subset keys add up to 3%), which the caller's
// settling rejects (one more round trip). The exact field keeps 48 bits besides the
// bucket's: two distinct pages are taken for exact copies with probability
// about n^2 / 2^(49 + bucket bits) over n pages.
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

// recordSize is a page record's length: the id, the samples, the simhash.
const recordSize = 6 + recordSamples + 8

// IndexPage is what the duplicate index keeps of a unique page.
type IndexPage struct {
	ID    uint64
	Exact uint64 // dedup.Signature.Exact
	// Keys are the page's supershingle keys, of which a page must share
	// Need with another to be its candidate. Either every R-subset of the
	// K supershingles hashed into one key (dedup's comboKey: C(K,R) keys,
	// Need 1), or, when the supershingles are wide enough that one alone
	// rarely matches by chance (AltaVista's 64 bits, not Bing's 16), the K
	// supershingles, each hashed with its position (SuperKey), with Need
	// R: the same candidates from K keys instead of C(K,R), 6 against 15
	// for AltaVista.
	Keys []uint64
	Need int // 0 = 1
	// AnyKeys are keys of which one alone makes a candidate: the band
	// keys of dedup's candidate stage (dedup.BandKeys).
	AnyKeys []uint64
	Sketch  []uint64 // dedup.Signature.Sketch
	Simhash uint64
}

// Candidate is an indexed page that shares a supershingle key with the page
// checked: its sketch bytes and simhash, for the caller to settle.
type Candidate struct {
	ID      uint64
	slot    string // the index's number of the page
	Sketch  []byte // the low byte of each sample
	Simhash uint64
}

// Equal is the number of sketch samples that agree on their low byte.
func (cd Candidate) Equal(sketch []uint64) int {
	eq := 0
	for i := range min(len(sketch), len(cd.Sketch)) {
		if byte(sketch[i]) == cd.Sketch[i] {
			eq++
		}
	}
	return eq
}

// Estimate is the fraction of sketch samples that agree on their low byte.
func (cd Candidate) Estimate(sketch []uint64) float64 {
	n := min(len(sketch), len(cd.Sketch))
	if n == 0 {
		return 0
	}
	return float64(cd.Equal(sketch)) / float64(n)
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
	v := k >> (64 - bb - 16)
	f := [2]byte{byte(v >> 8), byte(v)}
	return c.dedupTag() + "k:" + strconv.FormatUint(b, 10), string(f[:])
}

func (c *Crawl) recordPrefix() string { return c.dedupTag() + "g:" }
func (c *Crawl) slotKey() string      { return c.dedupTag() + "slot" }
func (c *Crawl) streamKey() string    { return c.dedupTag() + "n" }

// SuperKey is the index key of supershingle number i with value v (for
// IndexPage.Keys with Need = R).
func SuperKey(i int, v uint64) uint64 {
	z := v ^ uint64(i+1)*0x9e3779b97f4a7c15
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

func encodeRecord(pg *IndexPage) string {
	var r [recordSize]byte
	binary.BigEndian.PutUint16(r[:2], uint16(pg.ID>>32))
	binary.BigEndian.PutUint32(r[2:6], uint32(pg.ID))
	for i := 0; i < recordSamples && i < len(pg.Sketch); i++ {
		r[6+i] = byte(pg.Sketch[i])
	}
	binary.BigEndian.PutUint64(r[6+recordSamples:], pg.Simhash)
	return string(r[:])
}

// decodeRecord reads a record into cd (ID, Sketch, Simhash).
func decodeRecord(rec string, cd *Candidate) error {
	if len(rec) != recordSize {
		return fmt.Errorf("redisstate: page record of %d bytes, want %d", len(rec), recordSize)
	}
	b := []byte(rec)
	cd.ID = uint64(binary.BigEndian.Uint16(b[:2]))<<32 | uint64(binary.BigEndian.Uint32(b[2:6]))
	cd.Sketch = b[6 : 6+recordSamples]
	cd.Simhash = binary.BigEndian.Uint64(b[6+recordSamples:])
	return nil
}

// CheckAndAdd checks pg against the index and adds it when it finds neither
// an exact duplicate nor a supershingle candidate outside considered (ids the
// caller has settled already as not duplicates). One round trip.
func (c *Crawl) CheckAndAdd(ctx context.Context, pg *IndexPage, considered []Candidate, o DedupOptions) (Result, error) {
	keys, args := c.checkAndAddArgs(pg, considered, o)
	v, err := c.run(ctx, "check-and-add", checkAndAddScript, keys, args...)
	if err != nil {
		return Result{}, err
	}
	return checkAndAddResult(pg, v)
}

// checkAndAddCmd queues CheckAndAdd's script call in pipe (its first round
// sent with other commands: Index.CheckAndAddPrefetch); checkAndAddResult
// reads its reply.
func (c *Crawl) checkAndAddCmd(ctx context.Context, pipe redis.Pipeliner, pg *IndexPage, o DedupOptions) *redis.Cmd {
	keys, args := c.checkAndAddArgs(pg, nil, o)
	return checkAndAddScript.EvalSha(ctx, pipe, keys, args...)
}

// checkAndAddArgs are the script's keys and arguments.
func (c *Crawl) checkAndAddArgs(pg *IndexPage, considered []Candidate, o DedupOptions) ([]string, []any) {
	o = o.withDefaults()
	ek, ef := c.exactSlot(pg.Exact)
	keys := make([]string, 0, 3+len(pg.Keys)+len(pg.AnyKeys))
	keys = append(keys, ek, c.slotKey(), c.streamKey())
	args := make([]any, 0, 10+len(pg.Keys)+len(pg.AnyKeys))
	var cons strings.Builder
	cons.WriteByte(',')
	for _, cd := range considered {
		cons.WriteString(cd.slot)
		cons.WriteByte(',')
	}
	args = append(args, ef, pg.ID, encodeRecord(pg), c.recordPrefix(), c.recordBkts-1, o.MaxCandidates,
		max(o.StreamLen, 0), cons.String(), max(pg.Need, 1), len(pg.Keys))
	for _, ks := range [][]uint64{pg.Keys, pg.AnyKeys} {
		for _, k := range ks {
			sk, sf := c.superSlot(k)
			keys = append(keys, sk)
			args = append(args, sf)
		}
	}
	return keys, args
}

// checkAndAddResult reads the script's reply v for pg.
func checkAndAddResult(pg *IndexPage, v any) (Result, error) {
	reply, ok := v.([]any)
	if !ok || len(reply) == 0 {
		return Result{}, fmt.Errorf("redisstate: check-and-add: unexpected reply %v", v)
	}
	switch reply[0] {
	case int64(0):
		return Result{Added: true}, nil
	case int64(1):
		var orig Candidate
		rec, _ := reply[1].(string)
		if err := decodeRecord(rec, &orig); err != nil {
			return Result{}, fmt.Errorf("redisstate: check-and-add: exact duplicate: %w", err)
		}
		if orig.ID == pg.ID { // a retried call whose first run added the page
			return Result{Added: true}, nil
		}
		return Result{Exact: orig.ID}, nil
	}
	var r Result
	for i := 1; i+1 < len(reply); i += 2 {
		cd := Candidate{slot: fmt.Sprint(reply[i])}
		rec, _ := reply[i+1].(string)
		if err := decodeRecord(rec, &cd); err != nil {
			return Result{}, fmt.Errorf("redisstate: check-and-add: candidate %s: %w", cd.slot, err)
		}
		if cd.ID == pg.ID {
			// A retried call whose first run added the page finds it
			// through its own keys (its exact fingerprint matched
			// first, unless another page has the same one).
			continue
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
	return c.decideFrom(ctx, pg, settle, o, nil)
}

// decideFrom is Decide whose first round's result is first when not nil
// (its call sent already).
func (c *Crawl) decideFrom(ctx context.Context, pg *IndexPage, settle Settle, o DedupOptions, first *Result) (exact, near bool, original uint64, err error) {
	var considered []Candidate
	const maxRounds = 8
	for round := 0; round < maxRounds; round++ {
		var r Result
		if round == 0 && first != nil {
			r = *first
		} else if r, err = c.CheckAndAdd(ctx, pg, considered, o); err != nil {
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
		considered = append(considered, r.Candidates...)
	}
	return false, false, 0, fmt.Errorf("redisstate: page %d: new candidates in each of %d rounds", pg.ID, maxRounds)
}

var _ = redis.Nil
