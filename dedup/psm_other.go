//go:build !amd64 || purego

package dedup

func rankKeys(keys *[32]uint16, n int, rank *[32]uint8) bool { return false }

func prefetch(addr uintptr) {}

func prefetch2(a, b uintptr) {}

func locateVector(h *hindex, q *psmQuery) bool { return false }

func bucketMasks(h *hindex, q *psmQuery, k int, masks []uint8) bool { return false }

// Without the kernels, PSM's buckets are always scanned by the portable loops.
const hasPSMVector = false

var psmVector = true
