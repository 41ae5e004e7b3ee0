package dedup

import (
	"math/bits"
	"slices"
)

// hindex is an online multiset of (value, slot) pairs looked up by the top t
// bits of the value (the header). It keeps one copy of the data: a sorted base
// with an offset table of 2^t+1 entries, plus a small delta (at most
// maxDelta entries, chained from a cache-resident head table by header). When
// the delta outgrows min(maxDelta, base/8) it is sorted and merged in, and t is
// chosen again for the new size. A delta chain may hold entries of other
// headers: callers check each value, which they do anyway.
// In packed mode the slot lives in the low 32 bits of the value and slots is nil.
// Not safe for concurrent use: the Detector serializes writers.
type hindex struct {
	packed bool
	spare  int  // t = log2(len) - spare: about 2^spare entries per header
	maxT   uint // header bits at most
	t      uint
	vals   []uint64
	slots  []uint32
	off    []uint32
	dvals  []uint64
	dslots []uint32
	dnext  []int32
	dhead  []int32 // len deltaHeads; -1 = empty
}

const (
	minDelta   = 1024
	maxDelta   = 1 << 15
	deltaHeads = 1 << 16 // power of two, 2 * maxDelta
)

func newHindex(packed bool, spare int, maxT uint) *hindex {
	h := &hindex{packed: packed, spare: spare, maxT: maxT}
	h.t = h.chooseT(0)
	h.off = make([]uint32, (1<<h.t)+1)
	h.dhead = make([]int32, deltaHeads)
	for i := range h.dhead {
		h.dhead[i] = -1
	}
	return h
}

func (h *hindex) chooseT(n int) uint {
	t := bits.Len(uint(n)) - 1 - h.spare
	t = max(t, 4)
	return min(uint(t), h.maxT)
}

func (h *hindex) header(v uint64) uint32 { return uint32(v >> (64 - h.t)) }

func (h *hindex) len() int { return len(h.vals) + len(h.dvals) }

// insert adds (v, slot); in packed mode slot is ignored (it is inside v).
func (h *hindex) insert(v uint64, slot uint32) {
	b := h.header(v) & (deltaHeads - 1)
	h.dnext = append(h.dnext, h.dhead[b])
	h.dhead[b] = int32(len(h.dvals))
	h.dvals = append(h.dvals, v)
	if !h.packed {
		h.dslots = append(h.dslots, slot)
	}
	if len(h.dvals) > min(maxDelta, max(minDelta, len(h.vals)/8)) {
		h.merge()
	}
}

// merge sorts the delta into the base and rebuilds the offset table.
func (h *hindex) merge() {
	n := len(h.vals) + len(h.dvals)
	vals := make([]uint64, 0, n)
	var slots []uint32
	if h.packed {
		d := slices.Clone(h.dvals)
		slices.Sort(d)
		vals = mergeSorted(vals, h.vals, d)
	} else {
		idx := make([]int32, len(h.dvals))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortFunc(idx, func(a, b int32) int {
			va, vb := h.dvals[a], h.dvals[b]
			switch {
			case va < vb:
				return -1
			case va > vb:
				return 1
			}
			return int(h.dslots[a]) - int(h.dslots[b])
		})
		slots = make([]uint32, 0, n)
		i, j := 0, 0
		for i < len(h.vals) || j < len(idx) {
			if j == len(idx) || (i < len(h.vals) && h.vals[i] <= h.dvals[idx[j]]) {
				vals = append(vals, h.vals[i])
				slots = append(slots, h.slots[i])
				i++
			} else {
				vals = append(vals, h.dvals[idx[j]])
				slots = append(slots, h.dslots[idx[j]])
				j++
			}
		}
	}
	h.vals, h.slots = vals, slots
	h.t = h.chooseT(n)
	if cap(h.off) >= (1<<h.t)+1 {
		h.off = h.off[:(1<<h.t)+1]
	} else {
		h.off = make([]uint32, (1<<h.t)+1)
	}
	i := 0
	for hd := range uint32(1 << h.t) {
		h.off[hd] = uint32(i)
		for i < len(vals) && h.header(vals[i]) == hd {
			i++
		}
	}
	h.off[1<<h.t] = uint32(len(vals))
	h.dvals, h.dslots, h.dnext = h.dvals[:0], h.dslots[:0], h.dnext[:0]
	for i := range h.dhead {
		h.dhead[i] = -1
	}
}

func mergeSorted(dst, a, b []uint64) []uint64 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			dst = append(dst, a[i])
			i++
		} else {
			dst = append(dst, b[j])
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// base returns the sorted base entries whose header is hd.
func (h *hindex) base(hd uint32) (vals []uint64, slots []uint32) {
	lo, hi := h.off[hd], h.off[hd+1]
	if h.packed {
		return h.vals[lo:hi], nil
	}
	return h.vals[lo:hi], h.slots[lo:hi]
}

// deltaHead returns the first delta entry of the chain holding header hd, or
// -1; follow dnext. Entries of other headers may be on the chain.
func (h *hindex) deltaHead(hd uint32) int32 { return h.dhead[hd&(deltaHeads-1)] }

// memoryBytes is the RAM held by the index (slice capacities and the delta map).
func (h *hindex) memoryBytes() int64 {
	m := int64(cap(h.vals))*8 + int64(cap(h.slots))*4 + int64(cap(h.off))*4 +
		int64(cap(h.dvals))*8 + int64(cap(h.dslots))*4 + int64(cap(h.dnext))*4
	return m + int64(cap(h.dhead))*4
}
