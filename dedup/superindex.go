package dedup

import (
	"math/bits"
	"slices"
)

// superIndex is the supershingle subset-key index: an online multiset of
// (64-bit key, 32-bit slot) pairs looked up by key, built to hold 15 keys per
// page in under 100 bytes.
//
// The base is bucketed by the top t bits of the key (an offset table of 2^t+1
// entries, about 8-16 entries per bucket) and keeps 6 bytes per entry: the slot
// and a 16-bit tag holding the 15 key bits below the header followed by a
// marker bit. When t grows at a merge, the top bits of each tag move into the
// header and the tag shifts left: the marker keeps track of how many of its
// bits are still key bits, and a lookup compares only those. Keys are random,
// so an entry that lost tag bits only raises the false-hit rate a little; t
// lies in [minSuperT, maxSuperT], 15 bits apart, so the marker is never lost.
//
// New entries go to a delta (the top 32 key bits and the slot packed in a
// uint64, chained from a head table). The delta is merged when it reaches
// 1/64 of the base: a merge is linear (bucket by bucket copies, or a counting
// sort when t grows) and its cost per insert stays constant as the index
// grows, while the delta adds at most 0.25 bytes per entry.
// Not safe for concurrent use: the Detector serializes writers.
type superIndex struct {
	t     uint
	slots []uint32
	tags  []uint16
	off   []uint32 // len 2^t+1

	dvals []uint64 // top 32 key bits | slot
	dnext []int32
	dhead []int32 // power of two; -1 = empty
	hbits uint    // log2(len(dhead))
	limit int     // delta size that triggers a merge
	// The mappings behind slots, tags and off when they are large (makeBig).
	slotsMem, tagsMem, offMem bigMem
}

const (
	minSuperT      = 10
	maxSuperT      = minSuperT + 15
	superSpare     = 3 // about 2^3 to 2^4 entries per bucket
	superMinDelta  = 4096
	superDeltaFrac = 64 // merge when the delta reaches base/superDeltaFrac
)

func newSuperIndex() *superIndex {
	s := &superIndex{t: minSuperT}
	s.off = make([]uint32, (1<<s.t)+1)
	s.resetDelta()
	return s
}

// superT is the header width for n entries.
func superT(n int) uint {
	t := bits.Len(uint(n)) - 1 - superSpare
	return uint(min(max(t, minSuperT), maxSuperT))
}

// superTag is the tag of key under header width t: the 15 key bits below the
// header and the marker bit.
func superTag(key uint64, t uint) uint16 {
	return uint16(key>>(64-t-15))<<1 | 1
}

// deltaTag is superTag for a delta value (top 32 key bits | slot): only
// 32-t key bits are known below the header when t > 17.
func deltaTag(v uint64, t uint) uint16 {
	vb := min(15, 32-t)
	k := uint16(v>>(64-t-vb)) & (1<<vb - 1)
	return k<<(16-vb) | 1<<(15-vb)
}

// tagMatch reports whether the stored tag e agrees with query tag q on the
// key bits e still holds (those above its lowest set bit, the marker).
func tagMatch(e, q uint16) bool {
	// Below the marker m, e is zero and q arbitrary; at m, q may be either.
	return uint32(e^q) < uint32(e&-e)<<1
}

func (s *superIndex) len() int { return len(s.slots) + len(s.dvals) }

func (s *superIndex) resetDelta() {
	s.limit = max(superMinDelta, len(s.slots)/superDeltaFrac)
	hb := uint(bits.Len(uint(s.limit))) - 1 // heads: about one per two delta entries at the limit
	if s.dhead == nil || hb != s.hbits {
		s.hbits = hb
		s.dhead = make([]int32, 1<<hb)
	}
	for i := range s.dhead {
		s.dhead[i] = -1
	}
	s.dvals, s.dnext = s.dvals[:0], s.dnext[:0]
	if cap(s.dvals) < s.limit+1 {
		s.dvals = make([]uint64, 0, s.limit+1)
		s.dnext = make([]int32, 0, s.limit+1)
	}
}

func (s *superIndex) dheadOf(key uint64) uint32 { return uint32(key>>32) >> (32 - s.hbits) }

// insert adds (key, slot).
func (s *superIndex) insert(key uint64, slot uint32) {
	h := s.dheadOf(key)
	s.dnext = append(s.dnext, s.dhead[h])
	s.dhead[h] = int32(len(s.dvals))
	s.dvals = append(s.dvals, key&^0xffffffff|uint64(slot))
	if len(s.dvals) >= s.limit {
		s.merge()
	}
}

// merge moves the delta into the base, with a new header width when the base
// has grown enough.
func (s *superIndex) merge() {
	slices.Sort(s.dvals) // by the top 32 key bits: by header, whatever t is
	n := len(s.slots) + len(s.dvals)
	nt := max(superT(n), s.t)
	slots, slotsMem := makeBig[uint32](s, n)
	tags, tagsMem := makeBig[uint16](s, n)
	if nt == s.t {
		s.mergeSameT(slots, tags)
	} else {
		off, offMem := makeBig[uint32](s, (1<<nt)+1)
		s.mergeGrow(nt, slots, tags, off)
		s.offMem.free()
		s.off, s.offMem = off, offMem
	}
	s.slotsMem.free()
	s.tagsMem.free()
	s.t, s.slots, s.tags, s.slotsMem, s.tagsMem = nt, slots, tags, slotsMem, tagsMem
	s.resetDelta()
}

// mergeSameT copies base buckets and inserts the sorted delta's entries after
// each bucket's own, rewriting the offset table in place.
func (s *superIndex) mergeSameT(slots []uint32, tags []uint16) {
	t := s.t
	w, j := 0, 0
	for hd := range uint32(1 << t) {
		lo, hi := s.off[hd], s.off[hd+1]
		s.off[hd] = uint32(w)
		w += copy(slots[w:], s.slots[lo:hi])
		copy(tags[w-int(hi-lo):], s.tags[lo:hi])
		for ; j < len(s.dvals) && uint32(s.dvals[j]>>(64-t)) == hd; j++ {
			slots[w], tags[w] = uint32(s.dvals[j]), deltaTag(s.dvals[j], t)
			w++
		}
	}
	s.off[1<<t] = uint32(w)
}

// mergeGrow re-buckets the base under nt > t header bits (each entry's new
// header bits come from the top of its tag) with the delta, by counting sort.
func (s *superIndex) mergeGrow(nt uint, slots []uint32, tags []uint16, off []uint32) {
	d := nt - s.t
	newHd := func(hd uint32, e uint16) uint32 { return hd<<d | uint32(e>>(16-d)) }
	for hd := range uint32(1 << s.t) {
		for i := s.off[hd]; i < s.off[hd+1]; i++ {
			off[newHd(hd, s.tags[i])+1]++
		}
	}
	for _, v := range s.dvals {
		off[(v>>(64-nt))+1]++
	}
	for i := 1; i < len(off); i++ {
		off[i] += off[i-1]
	}
	// off[h] is now the start of bucket h; fill advances a cursor per bucket,
	// which ends at the start of bucket h+1: shift back afterwards.
	for hd := range uint32(1 << s.t) {
		for i := s.off[hd]; i < s.off[hd+1]; i++ {
			e := s.tags[i]
			p := &off[newHd(hd, e)]
			slots[*p], tags[*p] = s.slots[i], e<<d
			*p++
		}
	}
	for _, v := range s.dvals {
		p := &off[v>>(64-nt)]
		slots[*p], tags[*p] = uint32(v), deltaTag(v, nt)
		*p++
	}
	copy(off[1:], off[:len(off)-1])
	off[0] = 0
}

// lookup calls fn with the slot of every entry that may hold key (all its
// known bits agree), base first, until fn returns false; it reports whether
// the walk ran to the end.
func (s *superIndex) lookup(key uint64, fn func(slot uint32) bool) bool {
	t := s.t
	hd := uint32(key >> (64 - t))
	q := superTag(key, t)
	lo, hi := s.off[hd], s.off[hd+1]
	tags := s.tags[lo:hi]
	for i, e := range tags {
		if tagMatch(e, q) && !fn(s.slots[int(lo)+i]) {
			return false
		}
	}
	return s.lookupDelta(key, fn)
}

// lookupDelta is lookup in the delta alone.
func (s *superIndex) lookupDelta(key uint64, fn func(slot uint32) bool) bool {
	hi32 := key >> 32
	for j := s.dhead[s.dheadOf(key)]; j >= 0; j = s.dnext[j] {
		if v := s.dvals[j]; v>>32 == hi32 && !fn(uint32(v)) {
			return false
		}
	}
	return true
}

// memoryBytes is the RAM held by the index.
func (s *superIndex) memoryBytes() int64 {
	return int64(cap(s.slots))*4 + int64(cap(s.tags))*2 + int64(cap(s.off))*4 +
		int64(cap(s.dvals))*8 + int64(cap(s.dnext))*4 + int64(cap(s.dhead))*4
}
