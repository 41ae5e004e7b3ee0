package dedup

import (
	"math/bits"
	"slices"
)

// hindex is an online multiset of (value, slot) pairs looked up by the top t
// bits of the value (the header), used by the simhash indexes. It keeps one
// copy of the data: a sorted base with an offset table of 2^t+1 entries, plus
// a delta chained from a head table by header. The delta is merged into the
// base when it reaches 1/deltaFrac of it (at least minDelta, at most maxDelta
// entries): a merge costs O(base), so each insert pays O(deltaFrac) copies up
// to 2 M entries and base/maxDelta beyond, and t is chosen again for the new
// size.
// The head table grows with the delta limit, so chains stay short. A delta
// chain may hold entries of other headers: callers check each value, which
// they do anyway.
// Not safe for concurrent use: the Detector serializes writers.
type hindex struct {
	spare int  // t = log2(len) - spare: about 2^spare entries per header
	maxT  uint // header bits at most
	t     uint
	vals  []uint64
	slots []uint32
	off   []uint32
	delta []dentry
	dhead []int32 // power of two; -1 = empty
	limit int     // delta size that triggers a merge
	// The mappings behind vals, slots and off when they are large (makeBig).
	valsMem, slotsMem, offMem bigMem
}

const (
	minDelta  = 1024
	deltaFrac = 8
	// maxDelta caps the delta so that its head table and entries stay in
	// cache: at 10 M, a delta of base/8 held 882 k entries after the build,
	// and each lookup paid two more misses for it. Beyond 2 M entries an
	// insert then pays base/maxDelta copies at merges (40 at 10 M, about
	// 1 µs; a page costs tens of microseconds to sign).
	maxDelta = 1 << 18
)

func newHindex(spare int, maxT uint) *hindex {
	h := &hindex{spare: spare, maxT: maxT}
	h.t = h.chooseT(0)
	h.off = make([]uint32, (1<<h.t)+1)
	h.resetDelta()
	return h
}

func (h *hindex) chooseT(n int) uint {
	t := bits.Len(uint(n)) - 1 - h.spare
	t = max(t, 4)
	return min(uint(t), h.maxT)
}

func (h *hindex) header(v uint64) uint32 { return uint32(v >> (64 - h.t)) }

func (h *hindex) len() int { return len(h.vals) + len(h.delta) }

// dentry is a delta entry: value, slot and the chain's next entry on one
// line, so that following a chain costs one miss per entry, not three.
type dentry struct {
	val  uint64
	slot uint32
	next int32 // -1: end of the chain
}

// resetDelta empties the delta and sizes its head table for the next limit:
// one head per delta entry at the limit.
func (h *hindex) resetDelta() {
	h.limit = max(minDelta, min(len(h.vals)/deltaFrac, maxDelta))
	heads := 1 << bits.Len(uint(h.limit-1))
	if len(h.dhead) != heads {
		h.dhead = make([]int32, heads)
	}
	for i := range h.dhead {
		h.dhead[i] = -1
	}
	h.delta = h.delta[:0]
}

// deltaHead returns the first delta entry of the chain holding header hd, or
// -1; follow next. Entries of other headers may be on the chain.
func (h *hindex) deltaHead(hd uint32) int32 { return h.dhead[hd&uint32(len(h.dhead)-1)] }

// insert adds (v, slot).
func (h *hindex) insert(v uint64, slot uint32) {
	b := h.header(v) & uint32(len(h.dhead)-1)
	h.delta = append(h.delta, dentry{val: v, slot: slot, next: h.dhead[b]})
	h.dhead[b] = int32(len(h.delta) - 1)
	if len(h.delta) >= h.limit {
		h.merge()
	}
}

// merge sorts the delta into the base and rebuilds the offset table.
func (h *hindex) merge() {
	n := len(h.vals) + len(h.delta)
	// The chains are rebuilt empty after the merge: sort the entries
	// themselves.
	d := h.delta
	slices.SortFunc(d, func(a, b dentry) int {
		switch {
		case a.val < b.val:
			return -1
		case a.val > b.val:
			return 1
		}
		return int(a.slot) - int(b.slot)
	})
	vals, valsMem := makeBig[uint64](h, n)
	slots, slotsMem := makeBig[uint32](h, n)
	i, j := 0, 0
	for w := range vals {
		if j == len(d) || (i < len(h.vals) && h.vals[i] <= d[j].val) {
			vals[w], slots[w] = h.vals[i], h.slots[i]
			i++
		} else {
			vals[w], slots[w] = d[j].val, d[j].slot
			j++
		}
	}
	h.valsMem.free()
	h.slotsMem.free()
	h.vals, h.slots, h.valsMem, h.slotsMem = vals, slots, valsMem, slotsMem
	h.t = h.chooseT(n)
	if cap(h.off) >= (1<<h.t)+1 {
		h.off = h.off[:(1<<h.t)+1]
	} else {
		h.offMem.free()
		h.off, h.offMem = makeBig[uint32](h, (1<<h.t)+1)
	}
	i = 0
	for hd := range uint32(1 << h.t) {
		h.off[hd] = uint32(i)
		for i < len(vals) && h.header(vals[i]) == hd {
			i++
		}
	}
	h.off[1<<h.t] = uint32(len(vals))
	h.resetDelta()
}

// base returns the sorted base entries whose header is hd.
func (h *hindex) base(hd uint32) (vals []uint64, slots []uint32) {
	lo, hi := h.off[hd], h.off[hd+1]
	return h.vals[lo:hi], h.slots[lo:hi]
}

// memoryBytes is the RAM held by the index (slice capacities and the delta chains).
func (h *hindex) memoryBytes() int64 {
	m := int64(cap(h.vals))*8 + int64(cap(h.slots))*4 + int64(cap(h.off))*4 +
		int64(cap(h.delta))*16
	return m + int64(cap(h.dhead))*4
}
