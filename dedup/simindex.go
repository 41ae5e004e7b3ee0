package dedup

import (
	"math"
	"math/bits"
	"slices"
)

// SimhashIndex finds stored simhash fingerprints within a Hamming distance of a
// query. Both implementations are online (one fingerprint at a time) and not
// safe for concurrent use; the Detector serializes access. A Search's visit
// function must not Add (Add panics then): an insert may merge, and the
// merge unmaps the arrays the search is reading.
type SimhashIndex interface {
	// Add stores fingerprint fp under the dense id slot.
	Add(fp uint64, slot uint32)
	// Search calls visit for stored fingerprints within Hamming distance k of
	// fp until visit returns false; margins (Signature.Margins, may be nil)
	// order PSM's probes. It returns the number of header lookups made.
	Search(fp uint64, margins *[64]uint8, k int, visit func(slot uint32) bool) int
	// Len is the number of stored fingerprints.
	Len() int
	// MemoryBytes is the RAM held by the index.
	MemoryBytes() int64
}

// PSM is probabilistic simhash matching (Sood & Loguinov): one sorted copy of
// the fingerprints; a query looks up its own header (top t bits, t about
// log2 n) and then the headers with 1..k bits flipped, most probable first:
// bits are ranked by the query page's own |W_j| and combinations come from the
// volatility ordered set heap (VOSH), within a budget of lookups. Entries of a
// looked-up header are checked on the full 64 bits.
type PSM struct {
	idx    *hindex
	budget int
	logits *[256]int64 // flip logit by margin byte, fixed point (voshFix)
	buf    psmBuf      // a query's scratch (Search is not concurrent)
	// searching is set during Search: Add from a visit function panics.
	searching bool
}

type psmBuf struct {
	heap  voshHeap
	order [64]uint8
	logit [64]int64
	q     psmQuery
}

// psmQuery is a query in flight: its headers to look up and, once their
// offsets are read, its buckets and delta chains.
type psmQuery struct {
	fp     uint64
	hds    []uint32
	lo, hi []uint32
	cur    []int32
}

// NewPSM returns an empty PSM index making at most budget header lookups per
// query; sigma is the spread of normalized weight changes that turns a margin
// into a flip probability.
func NewPSM(budget int, sigma float64) *PSM { return newPSM(budget, sigma, psmSpare) }

// psmSpare sets PSM's header width t = log2(n) - psmSpare: about four
// fingerprints per header (32 bytes, one cache line) rather than one. Each
// lookup then costs the same miss but covers two header bits fewer, which
// need no flips: at 10 M and 8 lookups recall rises from 0.93 to 0.95, and
// the offset table shrinks from 4 to 1 byte per fingerprint.
const psmSpare = 2

func newPSM(budget int, sigma float64, spare int) *PSM {
	return &PSM{idx: newHindex(spare, 28), budget: min(max(budget, 1), maxPSMBudget), logits: fixLogits(flipLogits(sigma))}
}

// Add implements SimhashIndex.
func (p *PSM) Add(fp uint64, slot uint32) {
	if p.searching {
		panic(errAddInSearch)
	}
	p.idx.insert(fp, slot)
}

const errAddInSearch = "dedup: simhash index Add called from a Search visit function"

// Len implements SimhashIndex.
func (p *PSM) Len() int { return p.idx.len() }

// MemoryBytes implements SimhashIndex.
func (p *PSM) MemoryBytes() int64 { return p.idx.memoryBytes() }

// Search implements SimhashIndex.
func (p *PSM) Search(fp uint64, margins *[64]uint8, k int, visit func(slot uint32) bool) int {
	// The flag also keeps p, and with it the index's mappings, alive to the
	// end of the search.
	p.searching = true
	defer func() { p.searching = false }()
	q := &p.buf.q
	q.fp = fp
	q.hds = p.lookups(fp, margins, k, p.budget-1, q.hds)
	p.locate(q)
	return p.scan(q, k, visit)
}

// locate reads the offsets of q's headers, all of them before any bucket is
// scanned, so that their misses overlap each other.
func (p *PSM) locate(q *psmQuery) {
	h := p.idx
	n := len(q.hds)
	q.lo, q.hi, q.cur = grow(q.lo, n), grow(q.hi, n), grow(q.cur, n)
	for i, hd := range q.hds {
		q.lo[i], q.hi[i], q.cur[i] = h.off[hd], h.off[hd+1], h.deltaHead(hd)
	}
}

// scan checks q's buckets, then its delta chains, calling visit for every
// entry within distance k until visit returns false; it returns the lookups
// made (all of them, or up to the one whose match ended the search).
func (p *PSM) scan(q *psmQuery, k int, visit func(slot uint32) bool) int {
	h := p.idx
	fp := q.fp
	for i := range q.hds {
		lo, hi := q.lo[i], q.hi[i]
		for j, v := range h.vals[lo:hi] {
			if bits.OnesCount64(fp^v) <= k && !visit(h.slots[int(lo)+j]) {
				return i + 1
			}
		}
	}
	// Lookups whose headers share a slot of the delta's head table (it has
	// fewer bits than the header when the delta is small) share its chain:
	// walk it once, or its matches are visited twice.
	for i := 1; i < len(q.cur); i++ {
		if c := q.cur[i]; c >= 0 && slices.Contains(q.cur[:i], c) {
			q.cur[i] = -1
		}
	}
	// The delta chains, one link of every lookup per round.
	for live := true; live; {
		live = false
		for i := range q.hds {
			j := q.cur[i]
			if j < 0 {
				continue
			}
			live = true
			e := &h.delta[j]
			if bits.OnesCount64(fp^e.val) <= k && !visit(e.slot) {
				return len(q.hds)
			}
			q.cur[i] = e.next
		}
	}
	return len(q.hds)
}

// lookups returns the headers to look up: fp's own, then fp's with header
// bits (fp bits 63 .. 64-t) flipped, in VOSH order over the query's own margins,
// up to the budget. Only the m most probable bits are ranked: a set of flips
// that holds the bit of rank r is less probable than each of the r single flips
// of the bits ranked above it, so the first budget-1 sets never reach rank
// budget-1 (m = budget-1 gives the same lookups as ranking all t bits, up to
// the order of equally probable sets).
func (p *PSM) lookups(fp uint64, margins *[64]uint8, k, m int, dst []uint32) []uint32 {
	h := p.idx
	t := int(h.t)
	buf := &p.buf
	hds := append(dst[:0], h.header(fp))
	if p.budget > 1 && k > 0 {
		m = min(m, t)
		for i := range t {
			buf.order[i] = uint8(63 - i)
		}
		rankBits(buf.order[:t], buf.logit[:m], margins, p.logits)
		v := &buf.heap
		v.reset(buf.logit[:m], min(k, m))
		for len(hds) < p.budget {
			set, size, ok := v.next()
			if !ok {
				break
			}
			var mask uint64
			for ; size > 0; size-- {
				mask |= 1 << buf.order[uint8(set)]
				set >>= 8
			}
			hds = append(hds, h.header(fp^mask))
		}
	}
	return hds
}

// flipLogits returns, for every margin byte m (|W_j|/sqrt(n) = m/32), the logit
// log(p/(1-p)) of the flip probability p = P(Y > |W_j|), Y ~ N(0, sigma^2)
// the change of the normalized weight between near-duplicates. The
// probability of a set of flips (seed 003, eq. 6) orders like the sum of its
// logits.
func flipLogits(sigma float64) *[256]float64 {
	var t [256]float64
	for m := range t {
		p := 0.5 * math.Erfc(float64(m)/32/(sigma*math.Sqrt2))
		p = math.Min(math.Max(p, 1e-300), 0.5)
		t[m] = math.Log(p) - math.Log1p(-p)
	}
	return &t
}

// fixLogits converts flip logits to the fixed point the VOSH heap sums.
func fixLogits(l *[256]float64) *[256]int64 {
	var t [256]int64
	for i, v := range l {
		t[i] = toFix(v)
	}
	return &t
}

// toFix is a logit in fixed point, clamped to [-1000, 0) so that sums of up
// to 8 fit the frontier keys and every flip lowers a set's score: a bit with
// margin 0 has logit 0 (p = 1/2), and sets with and without it would tie,
// leaving the order of single and multiple flips to the frontier's tie-break
// (and making the lookups depend on how many bits were ranked).
func toFix(l float64) int64 { return min(int64(math.Round(max(l, -1000)*voshFix)), -1) }

// rankBits orders the bit positions by decreasing flip probability
// (increasing margin; ties keep their order) and writes each rank's logit:
// only the first len(logit) ranks (order[:len(logit)] holds them on return).
// Without margins every bit is equally likely.
func rankBits(order []uint8, logit []int64, margins *[64]uint8, table *[256]int64) {
	if margins == nil {
		for i := range logit {
			logit[i] = table[0]
		}
		return
	}
	n, m := len(order), len(logit)
	if n > 64 || m > n {
		panic("dedup: rankBits over more than 64 bits")
	}
	// The rank of bit i is the number of bits with a smaller key (margin,
	// position), counted four at a time: keys sit in 16-bit lanes with the
	// lane's top bit set, so subtracting key i leaves that bit set exactly in
	// the lanes whose key is not smaller. Branch-free (a sort's data-dependent
	// branches mispredict on random margins), n*n/4 steps.
	const (
		hi  = 0x8000_8000_8000_8000
		one = 0x0001_0001_0001_0001
	)
	var keys [64]uint16
	var in, byRank [64]uint8
	nw := (n + 3) / 4
	for i, b := range order {
		keys[i] = uint16(margins[b])<<6 | uint16(i) // < 2^14
		in[i] = b
	}
	for i := n; i < 4*nw; i++ {
		keys[i] = 0x7fff // padding: above every key
	}
	var lanes [16]uint64
	for w := range nw {
		k := keys[4*w : 4*w+4 : 4*w+4]
		lanes[w] = hi | uint64(k[0]) | uint64(k[1])<<16 | uint64(k[2])<<32 | uint64(k[3])<<48
	}
	for i, k := range keys[:n] {
		y := uint64(k) * one
		notLess := 0
		for _, x := range lanes[:nw] {
			notLess += bits.OnesCount64((x - y) & hi)
		}
		byRank[(4*nw-notLess)&63] = in[i]
	}
	for r := range m {
		b := byRank[r]
		order[r] = b
		logit[r] = table[margins[b]]
	}
}

// BPHS is block-permuted Hamming search (Manku, Jain & Das Sarma): the 64 bits
// are cut into G blocks; for each of the C(G,g) choices of g blocks a table
// holds the fingerprints sorted with those blocks first. Two fingerprints within
// distance k <= G-g agree on at least g blocks, so one lookup per table finds
// every match: recall 1, at C(G,g) copies of the data.
type BPHS struct {
	blocks [][2]uint // block i covers bits [blocks[i][0], blocks[i][0]+blocks[i][1])
	perms  [][]int   // per table: block order, header blocks first
	hdrLen []uint    // per table: bits in the header blocks
	tables []*hindex
	n      int
	// searching is set during Search: Add from a visit function panics.
	searching bool
}

// NewBPHS returns an empty index with G blocks and g header blocks per table.
func NewBPHS(G, g int) *BPHS {
	b := &BPHS{}
	start := uint(0)
	for i := range G {
		w := uint(64/G) + boolUint(i < 64%G)
		b.blocks = append(b.blocks, [2]uint{start, w})
		start += w
	}
	for _, head := range combinations(G, g) {
		perm := make([]int, 0, G)
		in := make([]bool, G)
		var hl uint
		for _, i := range head {
			perm = append(perm, int(i))
			in[i] = true
			hl += b.blocks[i][1]
		}
		for i := range G {
			if !in[i] {
				perm = append(perm, i)
			}
		}
		b.perms = append(b.perms, perm)
		b.hdrLen = append(b.hdrLen, hl)
		b.tables = append(b.tables, newHindex(0, min(hl, 28)))
	}
	return b
}

func boolUint(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// permute moves table ti's header blocks to the top bits.
func (b *BPHS) permute(ti int, fp uint64) uint64 {
	var out uint64
	pos := uint(64)
	for _, bi := range b.perms[ti] {
		s, w := b.blocks[bi][0], b.blocks[bi][1]
		v := (fp >> s) & (uint64(1)<<w - 1)
		pos -= w
		out |= v << pos
	}
	return out
}

// Add implements SimhashIndex.
func (b *BPHS) Add(fp uint64, slot uint32) {
	if b.searching {
		panic(errAddInSearch)
	}
	for ti, tb := range b.tables {
		tb.insert(b.permute(ti, fp), slot)
	}
	b.n++
}

// Len implements SimhashIndex.
func (b *BPHS) Len() int { return b.n }

// MemoryBytes implements SimhashIndex.
func (b *BPHS) MemoryBytes() int64 {
	var m int64
	for _, t := range b.tables {
		m += t.memoryBytes()
	}
	return m
}

// Search implements SimhashIndex; margins are not used.
func (b *BPHS) Search(fp uint64, _ *[64]uint8, k int, visit func(slot uint32) bool) int {
	b.searching = true
	defer func() { b.searching = false }()
	for ti, tb := range b.tables {
		q := b.permute(ti, fp)
		hd := tb.header(q)
		vals, slots := tb.base(hd)
		for i, v := range vals {
			if bits.OnesCount64(q^v) <= k && !visit(slots[i]) {
				return ti + 1
			}
		}
		for i := tb.deltaHead(hd); i >= 0; i = tb.delta[i].next {
			if e := &tb.delta[i]; bits.OnesCount64(q^e.val) <= k && !visit(e.slot) {
				return ti + 1
			}
		}
	}
	return len(b.tables)
}

// voshHeap enumerates subsets of bit ranks 0..b-1 of sizes 1..h in decreasing
// order of the sum of their logits (Sood & Loguinov, section 5.2): one VOSH
// tree per size, whose nodes join the frontier as their parents are popped.
//
// The frontier is small (at most h + 2 per pop), so it is a flat array of
// keys, score in fixed point above the node's position, and a pop is a
// branch-free scan for the largest key: a binary heap's data-dependent
// branches mispredict on every level, and cost more than the scan.
type voshHeap struct {
	fix  [64]int64 // logit of each rank, fixed point
	b    int
	keys []int64    // score<<voshPosBits | position in sets
	sets []voshNode // the frontier's subsets
}

// voshNode is a subset of at most 8 ranks, ascending, rank i in byte i of
// ranks: a child is its parent plus one in one byte, an addition (building it
// byte by byte made every copy of the node wait on a partial store).
type voshNode struct {
	ranks uint64
	size  uint8
}

const (
	voshPosBits = 16 // frontier positions: at most h + 2*(budget-1) < 2^16
	voshFix     = 1 << 32
	// maxPSMBudget bounds the lookups of one query, and with them the frontier.
	maxPSMBudget = 1 << 12
)

// reset starts an enumeration over fix, the ranks' logits in fixed point
// (toFix; non-increasing, at most 64 ranks), with subsets of at most h ranks.
func (v *voshHeap) reset(fix []int64, h int) {
	v.b = copy(v.fix[:], fix)
	v.keys, v.sets = v.keys[:0], v.sets[:0]
	var score int64
	for size := 1; size <= min(h, 8, v.b); size++ {
		score += v.fix[size-1]
		// ranks 0 .. size-1
		v.push(voshNode{ranks: 0x0706050403020100 & (1<<(8*size) - 1), size: uint8(size)}, score)
	}
}

func (v *voshHeap) push(n voshNode, score int64) {
	if len(v.sets) >= 1<<voshPosBits {
		panic("dedup: VOSH frontier over 2^16 sets (budget above maxPSMBudget?)")
	}
	v.keys = append(v.keys, score<<voshPosBits|int64(len(v.sets)))
	v.sets = append(v.sets, n)
}

// next pops the most probable remaining subset, as its ranks (rank i in byte
// i) and size, and adds its VOSH children (voshChildren, inlined: a child
// differs from its parent in one rank, so its score is the parent's with one
// logit swapped).
func (v *voshHeap) next() (ranks uint64, size int, ok bool) {
	n := len(v.keys)
	if n == 0 {
		return 0, 0, false
	}
	keys := v.keys
	a, b := keys[0], keys[0]
	i := 1
	for ; i+1 < n; i += 2 {
		a, b = maxNoBranch(a, keys[i]), maxNoBranch(b, keys[i+1])
	}
	if i < n {
		a = maxNoBranch(a, keys[i])
	}
	best := maxNoBranch(a, b)
	pos := int(best & (1<<voshPosBits - 1))
	score := best >> voshPosBits
	top := v.sets[pos]
	last := n - 1
	keys[pos] = keys[last]&^(1<<voshPosBits-1) | int64(pos)
	v.sets[pos] = v.sets[last]
	v.keys, v.sets = keys[:last], v.sets[:last]

	h := uint(top.size)
	set := top.ranks
	if r := uint8(set >> (8 * (h - 1))); int(r) < v.b-1 {
		v.push(voshNode{ranks: set + 1<<(8*(h-1)), size: top.size}, score-v.fix[r]+v.fix[r+1])
	}
	for j := int(h) - 2; j >= 0; j-- {
		sj := uint8(set >> (8 * uint(j)))
		gap := uint8(set>>(8*uint(j+1))) - sj
		if gap == 2 {
			v.push(voshNode{ranks: set + 1<<(8*uint(j)), size: top.size}, score-v.fix[sj]+v.fix[sj+1])
			break
		}
		if gap > 2 {
			break
		}
	}
	return set, int(h), true
}

// maxNoBranch is max(a, b) for |a-b| < 2^63, by arithmetic: the compiler
// turns max into a compare and branch, which mispredicts here.
func maxNoBranch(a, b int64) int64 {
	d := a - b
	return b + d&^(d>>63)
}

// voshChildren is Algorithm 2 of the seed, with ranks from 0: the left child
// increments the last element; the right child increments the element left of
// the rightmost gap when that gap is exactly 2, and does not exist otherwise.
func voshChildren(s []uint8, b int) (left, right [8]uint8, hasLeft, hasRight bool) {
	h := len(s)
	if int(s[h-1]) < b-1 {
		copy(left[:], s)
		left[h-1]++
		hasLeft = true
	}
	for j := h - 2; j >= 0; j-- {
		gap := s[j+1] - s[j]
		if gap == 2 {
			copy(right[:], s)
			right[j]++
			hasRight = true
			break
		}
		if gap > 2 {
			break
		}
	}
	return left, right, hasLeft, hasRight
}
