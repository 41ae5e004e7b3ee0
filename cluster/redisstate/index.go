package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// Index is the duplicate index in the shape the engine uses (the seam's
// DuplicateIndex): CheckAndAdd(ctx, id, sig, settle) -> dedup.Decision. It
// turns a signature into an IndexPage (the supershingles as keys when they
// are 64 bits wide, the R-subsets otherwise) and settles the candidates the
// script returns by the detector's rule: a candidate with fewer than
// SettleFloor equal samples is rejected, the others are settled best
// estimate first, at most dedup.MaxSettle a page, and the first at or above
// the threshold is the original; without a Settler (or when it cannot tell)
// the sketch estimate decides. Samples are compared on their low byte
// (recordSamples): the estimate of J rises by (1-J)/256.
//
// Candidates come from the exact fingerprint, the supershingle keys and the
// band keys of the candidate stage (dedup.BandKeys, as the detector); the
// simhash index is not shared (a worker replicates it: FollowNewPages).
type Index struct {
	c      *Crawl
	opt    dedup.Options
	filter dedup.FilterOptions
	floor  int
	o      DedupOptions
}

// NewIndex returns the crawl's duplicate index deciding as det does.
func (c *Crawl) NewIndex(det *dedup.Detector, o DedupOptions) *Index {
	opt := det.Options()
	return &Index{c: c, opt: opt, filter: opt.Filter.Resolved(), floor: det.SettleFloor(), o: o}
}

// page is sig's IndexPage under id.
func (x *Index) page(id uint64, sig *dedup.Signature) *IndexPage {
	pg := &IndexPage{ID: id, Exact: sig.Exact, Sketch: sig.Sketch, Simhash: sig.Simhash}
	if len(sig.Super) != x.filter.K || len(sig.Sketch) != x.opt.Samples {
		return pg // another shape: indexed by its exact fingerprint only
	}
	// The candidate stage's band keys: the detector's rule (dedup.BandKeys).
	pg.AnyKeys = dedup.BandKeys(sig.Sketch, x.opt.Bands, x.opt.BandRows, nil)
	if dedup.BandsCoverFilter(x.filter, x.opt.Bands, x.opt.BandRows) {
		// Every filter candidate is a band candidate: the filter's keys
		// would propose no other page (the default, AltaVista with 12
		// bands of 7: 12 keys a page instead of 18).
		return pg
	}
	if x.filter.Bits >= 64 {
		for i, v := range sig.Super {
			pg.Keys = append(pg.Keys, SuperKey(i, v))
		}
		pg.Need = x.filter.R
		return pg
	}
	subsets(x.filter.K, x.filter.R, func(idx []int) {
		var h uint64
		for _, i := range idx {
			h = SuperKey(i, h^sig.Super[i])
		}
		pg.Keys = append(pg.Keys, h)
	})
	pg.Need = 1
	return pg
}

// subsets calls fn with every r-subset of 0..k-1, in order.
func subsets(k, r int, fn func([]int)) {
	idx := make([]int, r)
	var rec func(start, depth int)
	rec = func(start, depth int) {
		if depth == r {
			fn(idx)
			return
		}
		for i := start; i <= k-(r-depth); i++ {
			idx[depth] = i
			rec(i+1, depth+1)
		}
	}
	rec(0, 0)
}

// CheckAndAdd decides whether sig (page id) duplicates an indexed page and
// adds it when it is unique, atomically across workers.
func (x *Index) CheckAndAdd(ctx context.Context, id uint64, sig *dedup.Signature, settle dedup.Settler) (dedup.Decision, error) {
	if sig == nil || sig.Words == 0 {
		return dedup.Decision{Class: dedup.Unique}, nil
	}
	return x.decideFrom(ctx, x.page(id, sig), settle, nil)
}

// CheckAndAddPrefetch is CheckAndAdd with its first round sent in the
// pipeline of tx's prefetch (crawl.PrefetchingIndex): the page's decision
// and its commit's reads in one round trip. The script decides, atomically,
// as in CheckAndAdd; the rounds after the first (new candidates) go alone.
// ok is false when tx is not a Store's of this index's Redis.
func (x *Index) CheckAndAddPrefetch(ctx context.Context, tx crawl.Tx, r crawl.PageReads, id uint64, sig *dedup.Signature, settle dedup.Settler) (d dedup.Decision, ok bool, err error) {
	t, ok := tx.(*seamTx)
	if !ok || t.s.c.rdb != x.c.rdb {
		return dedup.Decision{}, false, nil
	}
	if sig == nil || sig.Words == 0 {
		return dedup.Decision{Class: dedup.Unique}, true, t.PrefetchPage(r)
	}
	pg := x.page(id, sig)
	var cmd *redis.Cmd
	if err := t.prefetch(r, func(p redis.Pipeliner) { cmd = x.c.checkAndAddCmd(ctx, p, pg, x.o) }); err != nil {
		return dedup.Decision{}, true, err
	}
	var first *Result
	v, err := cmd.Result()
	switch {
	case isNoScript(err): // Redis lost its scripts (a restart): the first round goes alone, loading it
	case err != nil:
		return dedup.Decision{}, true, wrap("check-and-add", err)
	default:
		res, err := checkAndAddResult(pg, v)
		if err != nil {
			return dedup.Decision{}, true, err
		}
		first = &res
	}
	d, err = x.decideFrom(ctx, pg, settle, first)
	return d, true, err
}

// decideFrom decides pg by the script's rounds (the first one's result
// first, when sent already) and the detector's rule.
func (x *Index) decideFrom(ctx context.Context, pg *IndexPage, settle dedup.Settler, first *Result) (dedup.Decision, error) {
	st := dedup.Settlement{Settle: settle}
	var dec dedup.Decision
	rule := func(cands []Candidate) (uint64, bool) {
		d, ok := x.decide(pg, cands, &st)
		dec = d
		return d.Original, ok
	}
	exact, near, orig, err := x.c.decideFrom(ctx, pg, rule, x.o, first)
	switch {
	case err != nil:
		return dedup.Decision{}, err
	case exact:
		return dedup.Decision{Class: dedup.Exact, Original: orig, Similarity: 1, Method: dedup.MethodExact}, nil
	case near:
		return dec, nil
	}
	return dedup.Decision{Class: dedup.Unique}, nil
}

// decide applies the detector's rule (dedup.Settlement) to one batch of
// candidates.
func (x *Index) decide(pg *IndexPage, cands []Candidate, st *dedup.Settlement) (dedup.Decision, bool) {
	rs := make([]dedup.Ranked, 0, len(cands))
	for _, cd := range cands {
		rs = append(rs, dedup.Ranked{Equal: cd.Equal(pg.Sketch), ID: cd.ID})
	}
	return st.Decide(rs, len(pg.Sketch), x.floor, x.opt.Threshold, dedup.MethodSupershingle)
}

// Add indexes sig under id unless its exact fingerprint is indexed (the
// rebuild on resume: the shared index outlives a worker, so a page found
// there stays as it is).
func (x *Index) Add(ctx context.Context, id uint64, sig *dedup.Signature) error {
	if sig == nil || sig.Words == 0 {
		return nil
	}
	_, _, _, err := x.c.Decide(ctx, x.page(id, sig), func([]Candidate) (uint64, bool) { return 0, false }, x.o)
	return err
}
