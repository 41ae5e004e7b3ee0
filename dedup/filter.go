package dedup

import "math"

// binomial returns C(n, k) as a float64.
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	if k > n-k {
		k = n - k
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// FilterProbability is Broder's P(k,s,r)(j): the probability that at least r of
// k supershingles of s min-hash samples each agree for two sets of Jaccard
// similarity j. It ignores fingerprint collisions.
func FilterProbability(k, s, r int, j float64) float64 {
	if k < 1 || s < 1 || r < 0 || r > k || math.IsNaN(j) {
		return 0
	}
	j = math.Min(math.Max(j, 0), 1)
	p := math.Pow(j, float64(s))
	sum := 0.0
	for i := r; i <= k; i++ {
		sum += binomial(k, i) * math.Pow(p, float64(i)) * math.Pow(1-p, float64(k-i))
	}
	return math.Min(sum, 1)
}

// combinations returns every r-subset of {0..k-1} in lexicographic order.
func combinations(k, r int) [][]uint8 {
	var out [][]uint8
	cur := make([]uint8, r)
	var rec func(start, depth int)
	rec = func(start, depth int) {
		if depth == r {
			out = append(out, append([]uint8(nil), cur...))
			return
		}
		for i := start; i <= k-(r-depth); i++ {
			cur[depth] = uint8(i)
			rec(i+1, depth+1)
		}
	}
	rec(0, 0)
	return out
}

// comboKey is the index key of one subset of supershingles: a hash of the
// subset's number and its supershingle values (for r = 2 with 64-bit values,
// AltaVista's "new hash value computed from the two 64-bit values").
func comboKey(combo int, idx []uint8, super []uint64) uint64 {
	h := uint64(combo+1) * 0x9e3779b97f4a7c15
	for _, i := range idx {
		h = (h ^ super[i]) * 0xff51afd7ed558ccd
		h ^= h >> 29
	}
	return mix64(h)
}

// mix64 is the splitmix64 finalizer, a bijection on uint64.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// BandKeys appends to dst the candidate stage's index keys of sketch: one
// key per band of rows consecutive samples (band i holds samples
// i*rows .. (i+1)*rows-1), hashed with its number. Two pages share band i's
// key when all its samples agree (or, with probability 2^-64 per pair, by
// chance): the candidate rule of the banding, which both duplicate indexes
// (the in-process Detector and cluster/redisstate) index and probe with
// need 1 each. It appends nothing when bands < 1 or the sketch is short.
func BandKeys(sketch []uint64, bands, rows int, dst []uint64) []uint64 {
	if bands < 1 || rows < 1 || bands*rows > len(sketch) {
		return dst
	}
	for i := range bands {
		// A seed apart from comboKey's, so that the two kinds of key never
		// meet but by chance.
		h := uint64(i+1)*0xd1b54a32d192ed03 ^ 0x8cb92ba72f3d8dd7
		for _, v := range sketch[i*rows : (i+1)*rows] {
			h = (h ^ v) * 0xff51afd7ed558ccd
			h ^= h >> 29
		}
		dst = append(dst, mix64(h))
	}
	return dst
}

// CandidateProbability is the probability that two pages of Jaccard
// similarity j become candidates of the filter f (resolved) or of the
// banding of bands bands of rows samples (bands < 1: none), ignoring key
// collisions and the simhash index. When the bands tile the filter's
// supershingles (rows divides S and bands*rows >= K*S), R >= 1 agreeing
// supershingles imply an agreeing band and the union is exactly
// P(bands, rows, 1); otherwise the larger of the two, a lower bound.
func CandidateProbability(f FilterOptions, bands, rows int, j float64) float64 {
	pf := FilterProbability(f.K, f.S, f.R, j)
	if bands < 1 || rows < 1 {
		return pf
	}
	pb := FilterProbability(bands, rows, 1, j)
	if BandsCoverFilter(f, bands, rows) {
		return pb
	}
	return math.Max(pf, pb)
}

// BandsCoverFilter reports whether the bands tile the filter f's
// supershingles (rows divides S and the bands span the K*S samples the
// supershingles are made of): then every supershingle that agrees is
// S/rows bands that agree, every filter candidate is a band candidate
// (but for a supershingle collision, 2^-64 per pair with 64 bits), and the
// filter's keys add no candidate to the band keys'. The Redis index then
// leaves the filter's keys out (cluster/redisstate.Index).
func BandsCoverFilter(f FilterOptions, bands, rows int) bool {
	return bands > 0 && rows > 0 && f.Bits >= 64 && f.S%rows == 0 && bands*rows >= f.K*f.S
}
