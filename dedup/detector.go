// Package dedup finds exact and near-duplicate pages, after the methods of the
// seeds: Manasse's "On the Efficient Determination of Most Near Neighbors"
// (looped shingles, Rabin fingerprints, min-hash sketches, supershingles),
// Broder's filter design P(k,s,r), and Sood & Loguinov's probabilistic simhash
// matching.
//
// A page is a normalized token stream (parse.Tokenize). Sign turns it into a
// Signature: the Rabin fingerprint of the whole stream (exact duplicates), the
// looped w-word shingles' min-hash sketch, its supershingles, and a Charikar
// simhash. CheckAndAdd finds candidates through the exact fingerprint, the
// supershingle subset keys and a simhash index (PSM or BPHS), verifies them
// with the Jaccard similarity estimated from the stored sketches, and indexes
// the page when it is new. CheckAndAddSettled settles the candidates whose
// estimate is near the threshold on their exact Jaccard similarity, computed
// by the caller (settle.go). Everything is online, in memory, and pure: the
// crawl engine persists signatures and rebuilds the index with Add.
package dedup

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
)

// Class is the outcome of a duplicate check.
type Class uint8

// Classes.
const (
	Unique Class = iota
	Exact
	Near
)

// String returns "unique", "exact_duplicate" or "near_duplicate".
func (c Class) String() string {
	switch c {
	case Unique:
		return "unique"
	case Exact:
		return "exact_duplicate"
	case Near:
		return "near_duplicate"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Methods that find a duplicate.
const (
	MethodExact        = "exact"
	MethodSupershingle = "supershingle"
	MethodSimhash      = "simhash"
)

// Decision is the outcome of CheckAndAdd.
type Decision struct {
	Class      Class   // Unique, Exact, Near
	Original   uint64  // doc id of the page this one duplicates (0 if Unique)
	Similarity float64 // 1 for exact; for near, the exact Jaccard if Settled, else the sketch estimate
	Method     string  // "exact", "supershingle", "simhash" (the index that produced the verified candidate)
	Settled    bool    // near: decided on the exact Jaccard similarity (a Settler's)
}

// Detector indexes signatures and decides duplicates. It is safe for concurrent use.
type Detector struct {
	opt    Options
	filter FilterOptions
	sg     *signer
	combos [][]uint8
	nkeys  int // index keys per page: nsub filter keys, then the band keys
	nsub   int // filter subset keys indexed: len(combos), or 0 when the bands cover the filter
	floor  int // equal samples from which a candidate is settled (settleFloor)

	mu       sync.Mutex
	ids      []uint64          // slot -> doc id
	sketches []uint64          // slot*Samples .. : min-hash samples for verification
	exact    map[uint64]uint32 // exact fingerprint -> slot
	super    *superIndex       // subset keys -> slot
	sim      SimhashIndex      // nil when Simhash is off
	cands    []uint32          // scratch, under mu
	ranked   []Ranked          // rank's scratch, under mu
	probe    probeScratch      // superCandidates' working arrays (under mu)
}

// New returns an empty Detector for o (zero fields take their defaults).
func New(o Options) (*Detector, error) { return newDetector(o, hostKernels) }

// newDetector is New with the kernel set k.
func newDetector(o Options, k *kernels) (*Detector, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("dedup: invalid options: %w", err)
	}
	f := o.Filter.Resolved()
	d := &Detector{
		opt:    o,
		filter: f,
		sg:     newSigner(o, k),
		combos: combinations(f.K, f.R),
		floor:  settleFloor(o.Samples, o.Threshold),
		exact:  make(map[uint64]uint32),
		super:  newSuperIndex(),
	}
	d.nsub = len(d.combos)
	if BandsCoverFilter(f, o.Bands, o.BandRows) {
		// Every filter candidate is a band candidate: the subset keys
		// would propose no other page (the Redis index leaves them out by
		// the same rule).
		d.nsub = 0
	}
	d.nkeys = d.nsub + max(o.Bands, 0)
	if o.Simhash {
		if o.SimhashIndex == IndexBPHS {
			d.sim = NewBPHS(o.BPHSBlocks, o.BPHSHeader)
		} else {
			d.sim = NewPSM(o.PSMBudget, o.PSMSigma)
		}
	}
	return d, nil
}

// Options returns the options in effect (defaults filled in).
func (d *Detector) Options() Options { return d.opt }

// Sign computes the signature of a normalized token stream (from
// parse.Tokenize). It is pure and safe for concurrent use.
func (d *Detector) Sign(tokens []string) *Signature { return d.sg.sign(tokens) }

// Shingles appends to dst the fingerprints of the len(tokens) looped shingles
// of tokens, in order and with repeats; their set is what the sketches sample.
func (d *Detector) Shingles(tokens []string, dst []uint64) []uint64 {
	n := len(tokens)
	if n == 0 {
		return dst
	}
	b := d.sg.pool.Get().(*signBuf)
	defer d.sg.pool.Put(b)
	b.tok = grow(b.tok, n+d.sg.w-1)
	b.lens = grow(b.lens, n)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	d.sg.fingerprint(tokens, b.tok, dst[start:], b.lens, &b.stream)
	return dst
}

// PayloadDigest is the SHA-256 digest of a raw payload, for exact duplicates
// before parsing (WARC payload digests use SHA-1; the crawl engine may add it).
func PayloadDigest(body []byte) [32]byte { return sha256.Sum256(body) }

// Len returns the number of indexed pages.
func (d *Detector) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ids)
}

// Curve returns, at each Jaccard value, the probability that a pair becomes
// a candidate: of the filter P(k,s,r) or the band stage (CandidateProbability).
// Exact settlement decides every candidate whose estimate reaches the
// settled band, so this is the pipeline's recall above the threshold, less
// at most 4.1e-7 (settle.go).
func (d *Detector) Curve(js []float64) []float64 {
	out := make([]float64, len(js))
	for i, j := range js {
		out[i] = CandidateProbability(d.filter, d.opt.Bands, d.opt.BandRows, j)
	}
	return out
}

// FilterCurve returns P(k,s,r)(J) for the configured filter alone (the
// first stage) at each Jaccard value.
func (d *Detector) FilterCurve(js []float64) []float64 {
	out := make([]float64, len(js))
	for i, j := range js {
		out[i] = FilterProbability(d.filter.K, d.filter.S, d.filter.R, j)
	}
	return out
}

// Similarity estimates the Jaccard similarity of two signatures' shingle sets:
// the fraction of equal min-hash samples.
func Similarity(a, b *Signature) float64 {
	if len(a.Sketch) != len(b.Sketch) || len(a.Sketch) == 0 {
		return 0
	}
	return float64(equalSamples(a.Sketch, b.Sketch)) / float64(len(a.Sketch))
}

func equalSamples(a, b []uint64) int {
	b = b[:len(a)]
	n := 0
	for i, v := range a {
		if v == b[i] {
			n++
		}
	}
	return n
}

// usable reports whether sig was made with this detector's sketch shape.
func (d *Detector) usable(sig *Signature) bool {
	return len(sig.Sketch) == d.opt.Samples && len(sig.Super) == d.filter.K
}

// CheckAndAdd decides whether sig duplicates an indexed page and, if it is
// Unique, indexes it under id, atomically: of two concurrent calls with
// identical pages exactly one is Unique. Duplicates are not indexed (the
// representative stays the first page). Pages with Words == 0 are never
// duplicates and are not indexed. A candidate is a near duplicate when its
// estimated Jaccard similarity (equal sketch samples) reaches the threshold:
// the sketch rule, which misses 47% of the pairs at J = 0.90 that the filter
// proposes. CheckAndAddSettled decides on the exact similarity instead.
func (d *Detector) CheckAndAdd(id uint64, sig *Signature) Decision {
	return d.CheckAndAddSettled(id, sig, nil)
}

// CheckAndAddSettled is CheckAndAdd with exact settlement: every candidate
// whose estimate is at least SettleFloor()/Samples is decided on the exact
// Jaccard similarity that settle returns, at most MaxSettle per call, best
// estimate first (the rule and its error rates are in settle.go). A nil
// settle is the sketch rule of CheckAndAdd.
func (d *Detector) CheckAndAddSettled(id uint64, sig *Signature, settle Settler) Decision {
	if sig == nil || sig.Words == 0 {
		return Decision{Class: Unique}
	}
	var keys [maxCombinations]uint64
	ok := d.usable(sig)
	if ok {
		d.keys(sig, keys[:d.nkeys])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if slot, hit := d.exact[sig.Exact]; hit {
		return Decision{Class: Exact, Original: d.ids[slot], Similarity: 1, Method: MethodExact}
	}
	if ok {
		if dec, found := d.near(sig, keys[:d.nkeys], settle); found {
			return dec
		}
	}
	d.addLocked(id, sig, ok, keys[:d.nkeys])
	return Decision{Class: Unique}
}

// Add indexes sig under id without checking (used to rebuild the index from
// storage after a restart). Pages with Words == 0 are ignored.
func (d *Detector) Add(id uint64, sig *Signature) {
	if sig == nil || sig.Words == 0 {
		return
	}
	var keys [maxCombinations]uint64
	ok := d.usable(sig)
	if ok {
		d.keys(sig, keys[:d.nkeys])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addLocked(id, sig, ok, keys[:d.nkeys])
}

// keys fills keys (len d.nkeys) with sig's index keys: the filter's subset
// keys unless the bands cover the filter (BandsCoverFilter), then the band
// keys (BandKeys); the Redis index keys a page by the same two rules.
func (d *Detector) keys(sig *Signature, keys []uint64) {
	for c, idx := range d.combos[:d.nsub] {
		keys[c] = comboKey(c, idx, sig.Super)
	}
	BandKeys(sig.Sketch, d.opt.Bands, d.opt.BandRows, keys[d.nsub:d.nsub])
}

func (d *Detector) addLocked(id uint64, sig *Signature, usable bool, keys []uint64) {
	slot := uint32(len(d.ids))
	d.ids = append(d.ids, id)
	// Of pages with one exact fingerprint (only Add indexes more than one),
	// the smallest id represents them all, whatever the order they came in.
	if first, dup := d.exact[sig.Exact]; !dup || id < d.ids[first] {
		d.exact[sig.Exact] = slot
	}
	if !usable {
		// A sketch of another shape is indexed by its exact fingerprint only;
		// no key points at this slot, so its zero sketch is never compared.
		d.sketches = append(d.sketches, make([]uint64, d.opt.Samples)...)
		return
	}
	d.sketches = append(d.sketches, sig.Sketch...)
	for _, k := range keys {
		d.super.insert(k, slot)
	}
	if d.sim != nil {
		d.sim.Add(sig.Simhash, slot)
	}
}

// near looks for a verified near-duplicate, supershingle candidates first.
func (d *Detector) near(sig *Signature, keys []uint64, settle Settler) (Decision, bool) {
	st := Settlement{Settle: settle}
	verify := func(method string) (Decision, bool) {
		return st.Decide(d.rank(sig), d.opt.Samples, d.floor, d.opt.Threshold, method)
	}
	d.cands = d.cands[:0]
	limit := d.opt.MaxCandidates
	d.superCandidates(keys, func(slot uint32) bool {
		d.addCand(slot)
		return len(d.cands) < limit
	})
	if dec, ok := verify(MethodSupershingle); ok {
		return dec, true
	}
	if d.sim == nil {
		return Decision{}, false
	}
	d.cands = d.cands[:0]
	d.sim.Search(sig.Simhash, &sig.Margins, d.opt.SimhashK, func(slot uint32) bool {
		d.addCand(slot)
		return len(d.cands) < limit
	})
	return verify(MethodSimhash)
}

// superCandidates calls fn with the slot of every indexed key equal to one of
// keys (on 32 bits), until fn returns false. The lookups are staged (every
// key's bucket offsets and delta chain head first, then the buckets) so that
// their cache misses overlap.
func (d *Detector) superCandidates(keys []uint64, fn func(slot uint32) bool) {
	s := d.super
	n := len(keys)
	lo, hi, cur, q := d.probe.get(n)
	for i, k := range keys {
		hd := k >> (64 - s.t)
		lo[i], hi[i] = s.off[hd], s.off[hd+1]
		cur[i] = s.dhead[s.dheadOf(k)]
		q[i] = superTag(k, s.t)
	}
	// The delta chains are walked in lockstep, one link of every key per
	// round, after the base buckets are scanned.
	for i := range keys {
		base := s.slots[lo[i]:hi[i]]
		for j, e := range s.tags[lo[i]:hi[i]] {
			if tagMatch(e, q[i]) && !fn(base[j]) {
				return
			}
		}
	}
	for live := true; live; {
		live = false
		for i, k := range keys {
			j := cur[i]
			if j < 0 {
				continue
			}
			live = true
			if v := s.dvals[j]; v>>32 == k>>32 && !fn(uint32(v)) {
				return
			}
			cur[i] = s.dnext[j]
		}
	}
}

// probeScratch holds the per-key arrays of one supershingle probe.
type probeScratch struct {
	lo, hi []uint32
	cur    []int32
	q      []uint16
}

func (p *probeScratch) get(n int) (lo, hi []uint32, cur []int32, q []uint16) {
	if cap(p.lo) < n {
		p.lo, p.hi = make([]uint32, n), make([]uint32, n)
		p.cur, p.q = make([]int32, n), make([]uint16, n)
	}
	return p.lo[:n], p.hi[:n], p.cur[:n], p.q[:n]
}

func (d *Detector) addCand(slot uint32) {
	for _, c := range d.cands {
		if c == slot {
			return
		}
	}
	d.cands = append(d.cands, slot)
}

// IndexStats describes the memory the index holds.
type IndexStats struct {
	Pages             int
	SupershingleBytes int64 // subset-key index
	SimhashBytes      int64 // simhash index
	SketchBytes       int64 // sketches kept for verification
	ExactEntries      int
}

// Stats reports the index's size.
func (d *Detector) Stats() IndexStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := IndexStats{
		Pages:             len(d.ids),
		SupershingleBytes: d.super.memoryBytes(),
		SketchBytes:       int64(cap(d.sketches))*8 + int64(cap(d.ids))*8,
		ExactEntries:      len(d.exact),
	}
	if d.sim != nil {
		st.SimhashBytes = d.sim.MemoryBytes()
	}
	return st
}
