//go:build amd64 && !purego

package dedup

import "unsafe"

//go:noescape
func rankAVX512(keys *[32]uint16, n int, rank *[32]uint8)

// rankKeys sets rank[i] to the number of keys smaller than keys[i], for i < n
// (AVX-512 BW: kernels.rankKeys); lanes n..31 must hold a key above every
// other. It reports false (doing nothing) for more than 32 keys.
func rankKeys(keys *[32]uint16, n int, rank *[32]uint8) bool {
	if n > 32 {
		return false
	}
	rankAVX512(keys, n, rank)
	return true
}

// prefetch asks for the cache line at addr without waiting for it: unlike a
// load, the instruction retires at once, so the work after it goes on while
// the line comes (a load that misses holds up everything behind it once the
// reorder buffer fills). addr need not be valid memory: the instruction
// never faults.
func prefetch(addr uintptr)

// prefetch2 is two prefetches in one call.
func prefetch2(a, b uintptr)

//go:noescape
func locateAVX512(hds *uint32, n int, off *uint32, dhead *int32, dmask uint32, vals *uint64, lo, hi *uint32, cur *int32, delta *dentry)

//go:noescape
func bucketMasksAVX512(vals *uint64, lo, hi *uint32, n int, fp uint64, k int, out *uint8)

// locateAVX512 prefetches delta entries at 16 bytes each.
var _ [0]struct{} = [unsafe.Sizeof(dentry{}) - 16]struct{}{}

// locateVector is locate's loop in one call (AVX-512 with VPOPCNTDQ:
// kernels.locate): the call replaces a prefetch call per line and the slices'
// appends.
func locateVector(h *hindex, q *psmQuery) bool {
	// The kernel does not check bounds: every header must be below 2^t,
	// as h.header makes them, with the offset table sized to match.
	if len(q.hds) == 0 || len(h.off) != 1<<h.t+1 {
		return false
	}
	n := len(q.hds)
	locateAVX512(&q.hds[0], n, unsafe.SliceData(h.off), &h.dhead[0], uint32(len(h.dhead)-1),
		unsafe.SliceData(h.vals), &q.lo[:n][0], &q.hi[:n][0], &q.cur[:n][0], unsafe.SliceData(h.delta))
	return true
}

// bucketMasks sets masks[i] to the entries among the first 8 of q's bucket i
// within distance k of q.fp, as bits (kernels.bucketMasks).
func bucketMasks(h *hindex, q *psmQuery, k int, masks []uint8) bool {
	// The kernel compares distances with k unsigned: a negative k (no
	// match at all) goes to the portable loop.
	if len(q.hds) == 0 || k < 0 {
		return false
	}
	n := len(q.hds)
	bucketMasksAVX512(unsafe.SliceData(h.vals), &q.lo[:n][0], &q.hi[:n][0], n, q.fp, k, &masks[:n][0])
	return true
}
