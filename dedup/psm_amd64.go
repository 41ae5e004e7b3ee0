//go:build amd64 && !purego

package dedup

//go:noescape
func rankAVX512(keys *[32]uint16, n int, rank *[32]uint8)

// rankKeys sets rank[i] to the number of keys smaller than keys[i], for i < n,
// when the CPU has AVX-512 BW; lanes n..31 must hold a key above every other.
// It reports false (doing nothing) otherwise.
func rankKeys(keys *[32]uint16, n int, rank *[32]uint8) bool {
	if !hasAVX512 || !rankVector || n > 32 {
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
