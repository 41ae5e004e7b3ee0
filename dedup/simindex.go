package dedup

import (
	"math"
	"math/bits"
	"sync"
)

// SimhashIndex finds stored simhash fingerprints within a Hamming distance of a
// query. Both implementations are online (one fingerprint at a time) and not
// safe for concurrent use; the Detector serializes access.
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
	logits *[256]float64 // flip logit by margin byte
	pool   sync.Pool     // *psmBuf
	sink   uint64        // keeps the staged loads of Search
}

type psmBuf struct {
	heap   voshHeap
	order  [64]uint8
	logit  [64]float64
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
	p := &PSM{idx: newHindex(spare, 28), budget: max(budget, 1), logits: flipLogits(sigma)}
	p.pool.New = func() any { return new(psmBuf) }
	return p
}

// Add implements SimhashIndex.
func (p *PSM) Add(fp uint64, slot uint32) { p.idx.insert(fp, slot) }

// Len implements SimhashIndex.
func (p *PSM) Len() int { return p.idx.len() }

// MemoryBytes implements SimhashIndex.
func (p *PSM) MemoryBytes() int64 { return p.idx.memoryBytes() }

// Search implements SimhashIndex.
func (p *PSM) Search(fp uint64, margins *[64]uint8, k int, visit func(slot uint32) bool) int {
	h := p.idx
	t := int(h.t)
	buf := p.pool.Get().(*psmBuf)
	defer p.pool.Put(buf)
	// The lookups: fp itself, then flips of header bits (fp bits 63 .. 64-t)
	// in VOSH order, ranked by the query's own margins.
	hds := append(buf.hds[:0], h.header(fp))
	if p.budget > 1 && k > 0 {
		for i := range t {
			buf.order[i] = uint8(63 - i)
		}
		rankBits(buf.order[:t], buf.logit[:t], margins, p.logits)
		v := &buf.heap
		v.reset(buf.logit[:t], min(k, t))
		for len(hds) < p.budget {
			set, ok := v.next()
			if !ok {
				break
			}
			var mask uint64
			for _, r := range set {
				mask |= 1 << buf.order[r]
			}
			hds = append(hds, h.header(fp^mask))
		}
	}
	buf.hds = hds
	// Stage the loads: round 1, every lookup's offsets and delta chain head;
	// round 2, the first fingerprint of every bucket and chain. The loads of
	// a round are independent, so their cache misses overlap.
	buf.lo, buf.hi, buf.cur = buf.lo[:0], buf.hi[:0], buf.cur[:0]
	for _, hd := range hds {
		buf.lo = append(buf.lo, h.off[hd])
		buf.hi = append(buf.hi, h.off[hd+1])
		buf.cur = append(buf.cur, h.deltaHead(hd))
	}
	var touch uint64
	for i := range hds {
		if lo := buf.lo[i]; lo < buf.hi[i] {
			touch += h.vals[lo]
		}
		if j := buf.cur[i]; j >= 0 {
			touch += h.dvals[j]
		}
	}
	p.sink += touch
	for i := range hds {
		lo, hi := buf.lo[i], buf.hi[i]
		for j, v := range h.vals[lo:hi] {
			if bits.OnesCount64(fp^v) <= k && !visit(h.slots[int(lo)+j]) {
				return i + 1
			}
		}
	}
	// The delta chains, one link of every lookup per round.
	for live := true; live; {
		live = false
		for i := range hds {
			j := buf.cur[i]
			if j < 0 {
				continue
			}
			live = true
			if bits.OnesCount64(fp^h.dvals[j]) <= k && !visit(h.dslots[j]) {
				return len(hds)
			}
			buf.cur[i] = h.dnext[j]
		}
	}
	return len(hds)
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

// rankBits sorts the bit positions in order by decreasing flip probability
// (increasing margin; stable) and writes each rank's logit. Without margins
// every bit is equally likely.
func rankBits(order []uint8, logit []float64, margins *[64]uint8, table *[256]float64) {
	if margins == nil {
		for i := range logit {
			logit[i] = table[0]
		}
		return
	}
	// Rank by counting (branch-free: a sort's data-dependent branches
	// mispredict on random margins): the rank of bit i is the number of bits
	// with a smaller (margin, position) key, so ties keep their order.
	n := len(order)
	if n > 64 {
		panic("dedup: rankBits over more than 64 bits")
	}
	var keys [64]uint32
	var in [64]uint8
	for i, b := range order {
		keys[i] = uint32(margins[b])<<8 | uint32(i)
		in[i] = b
	}
	for i := 0; i < n; i++ {
		ki, r := keys[i], uint32(0)
		for _, kj := range keys[:n] {
			r += (kj - ki) >> 31
		}
		order[r] = in[i]
	}
	for i, b := range order {
		logit[i] = table[margins[b]]
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
	for ti, tb := range b.tables {
		q := b.permute(ti, fp)
		hd := tb.header(q)
		vals, slots := tb.base(hd)
		for i, v := range vals {
			if bits.OnesCount64(q^v) <= k && !visit(slots[i]) {
				return ti + 1
			}
		}
		for i := tb.deltaHead(hd); i >= 0; i = tb.dnext[i] {
			if bits.OnesCount64(q^tb.dvals[i]) <= k && !visit(tb.dslots[i]) {
				return ti + 1
			}
		}
	}
	return len(b.tables)
}

// voshHeap enumerates subsets of bit ranks 0..b-1 of sizes 1..h in decreasing
// order of the sum of their logits (Sood & Loguinov, section 5.2): one VOSH
// tree per size, whose nodes are expanded into a max-heap as they are popped.
type voshHeap struct {
	logit []float64
	b     int
	nodes []voshNode
	out   [8]uint8
}

type voshNode struct {
	score float64
	size  uint8
	set   [8]uint8
}

func (v *voshHeap) reset(logit []float64, h int) {
	v.logit, v.b = logit, len(logit)
	v.nodes = v.nodes[:0]
	for size := 1; size <= min(h, 8, v.b); size++ {
		var n voshNode
		n.size = uint8(size)
		for i := range size {
			n.set[i] = uint8(i)
		}
		v.push(n)
	}
}

func (v *voshHeap) score(n *voshNode) float64 {
	s := 0.0
	for _, r := range n.set[:n.size] {
		s += v.logit[r]
	}
	return s
}

// next pops the most probable remaining subset and pushes its VOSH children
// (voshChildren, inlined: a child differs from its parent in one rank, so its
// score is the parent's with one logit swapped).
func (v *voshHeap) next() ([]uint8, bool) {
	if len(v.nodes) == 0 {
		return nil, false
	}
	top := v.nodes[0]
	last := len(v.nodes) - 1
	v.nodes[0] = v.nodes[last]
	v.nodes = v.nodes[:last]
	v.down(0)
	h := int(top.size)
	s := top.set[:h]
	if r := s[h-1]; int(r) < v.b-1 {
		c := top
		c.set[h-1] = r + 1
		c.score = top.score - v.logit[r] + v.logit[r+1]
		v.pushScored(c)
	}
	for j := h - 2; j >= 0; j-- {
		gap := s[j+1] - s[j]
		if gap == 2 {
			c := top
			c.set[j] = s[j] + 1
			c.score = top.score - v.logit[s[j]] + v.logit[s[j]+1]
			v.pushScored(c)
			break
		}
		if gap > 2 {
			break
		}
	}
	v.out = top.set
	return v.out[:h], true
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

func (v *voshHeap) push(n voshNode) {
	n.score = v.score(&n)
	v.pushScored(n)
}

// pushScored adds n, whose score is set.
func (v *voshHeap) pushScored(n voshNode) {
	v.nodes = append(v.nodes, n)
	i := len(v.nodes) - 1
	for i > 0 {
		p := (i - 1) / 2
		if v.nodes[p].score >= v.nodes[i].score {
			break
		}
		v.nodes[p], v.nodes[i] = v.nodes[i], v.nodes[p]
		i = p
	}
}

func (v *voshHeap) down(i int) {
	n := len(v.nodes)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && v.nodes[r].score > v.nodes[l].score {
			c = r
		}
		if v.nodes[i].score >= v.nodes[c].score {
			return
		}
		v.nodes[i], v.nodes[c] = v.nodes[c], v.nodes[i]
		i = c
	}
}
