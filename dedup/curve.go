package dedup

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// EndToEndPoint is one point of a measured end-to-end curve: of Pairs page
// pairs whose looped shingle sets have exact Jaccard similarity J, the
// fraction whose second page a Detector drops as a copy of the first.
type EndToEndPoint struct {
	J       float64 // exact Jaccard of every pair of the point (at least the J asked for, within 0.002)
	Words   int     // words per page
	Theory  float64 // Detector.Curve(J): the pair becomes a candidate (filter or band stage)
	Settled float64 // dropped by CheckAndAddSettled with exact settlement (the crawl's rule)
	Sketch  float64 // dropped by CheckAndAdd, the sketch rule (estimate >= threshold)
	Pairs   int
}

// curvePageWords is the page length the pairs of EndToEndCurve aim at.
const curvePageWords = 500

// EndToEndCurve measures the whole duplicate decision (filter, simhash,
// verification) at each Jaccard value of js in [0.3, 1]: for each, it builds
// pairs random pages (random words, so every shingle is distinct) and copies
// of them with c words replaced at positions at least w apart (looped), so
// that exactly w*c shingles of each page are not in the other and
// J = (N - w*c) / (N + w*c) for N words, with N the smallest length of about
// 500 words that reaches the J asked for. Each first page is indexed, each
// copy checked, by two Detectors of options o: one settles exactly (a Settler
// that computes ExactJaccard from the pages' shingles), one applies the
// sketch rule. It is deterministic for a seed, and costs about 0.2 ms per
// pair on one core (the report's 15 points of 200 pairs: about 0.5 s).
func EndToEndCurve(o Options, js []float64, pairs int, seed uint64) ([]EndToEndPoint, error) {
	o = o.WithDefaults()
	if pairs < 1 {
		return nil, fmt.Errorf("dedup: end-to-end curve needs at least one pair, got %d", pairs)
	}
	for _, j := range js {
		if !(j >= 0.3 && j <= 1) {
			return nil, fmt.Errorf("dedup: end-to-end curve at J = %g: want 0.3 <= J <= 1", j)
		}
	}
	out := make([]EndToEndPoint, 0, len(js))
	rng := rand.New(rand.NewPCG(seed, 0x5e77e))
	for _, target := range js {
		settled, err := New(o)
		if err != nil {
			return nil, err
		}
		sketch, _ := New(o)
		w := o.ShingleWords
		n, c := pairShape(target, w)
		pt := EndToEndPoint{J: float64(n-w*c) / float64(n+w*c), Words: n, Pairs: pairs}
		pt.Theory = settled.Curve([]float64{pt.J})[0]
		var dropS, dropK int
		var shA, shB []uint64
		for i := range pairs {
			a, b := curvePair(rng, n, c, w)
			idA, idB := uint64(2*i+1), uint64(2*i+2)
			sa, sb := settled.Sign(a), settled.Sign(b)
			settled.Add(idA, sa)
			sketch.Add(idA, sa)
			shB = shB[:0]
			settle := func(orig uint64) (float64, bool) {
				if orig != idA {
					return 0, false // another pair's page: random words, never a candidate in the band
				}
				shA = settled.Shingles(a, shA[:0])
				if len(shB) == 0 {
					shB = settled.Shingles(b, shB)
				}
				return ExactJaccard(shA, shB), true
			}
			if dec := settled.CheckAndAddSettled(idB, sb, settle); dec.Class != Unique && dec.Original == idA {
				dropS++
			}
			if dec := sketch.CheckAndAdd(idB, sb); dec.Class != Unique && dec.Original == idA {
				dropK++
			}
		}
		pt.Settled = float64(dropS) / float64(pairs)
		pt.Sketch = float64(dropK) / float64(pairs)
		out = append(out, pt)
	}
	return out, nil
}

// pairShape returns the page length n and the number of replaced words c of
// a pair at Jaccard at least target, within 0.002 of it: c replacements at
// least w apart change w*c shingles of each page.
func pairShape(target float64, w int) (n, c int) {
	if target >= 1 {
		return curvePageWords, 0
	}
	best := math.Inf(1)
	for cc := 1; cc <= curvePageWords; cc++ {
		nn := int(math.Ceil(float64(w*cc)*(1+target)/(1-target) - 1e-9))
		if nn < w*cc || nn > 4*curvePageWords {
			continue
		}
		j := float64(nn-w*cc) / float64(nn+w*cc)
		// Prefer a J close to the target, then a length close to the aim.
		score := (j-target)*1e4 + math.Abs(float64(nn-curvePageWords))/curvePageWords
		if j >= target-1e-12 && score < best {
			best, n, c = score, nn, cc
		}
	}
	return n, c
}

// curvePair returns a page of n random words and a copy with c of them
// replaced at positions at least w apart, looped (n >= w*c).
func curvePair(rng *rand.Rand, n, c, w int) (a, b []string) {
	a = BandWords(rng, n)
	return a, replaceApart(rng, a, c, w)
}

// replaceApart returns a copy of a with c words replaced by new ones at
// positions at least w apart, looped (len(a) >= w*c): exactly w*c looped
// w-word shingles of each page are then not in the other.
func replaceApart(rng *rand.Rand, a []string, c, w int) []string {
	b := slices.Clone(a)
	if c == 0 {
		return b
	}
	n := len(a)
	// Gaps of w plus a share of the slack n - w*c: sorted offsets r_i in
	// [0, slack] put replacement i at start + i*w + r_i.
	slack := n - w*c
	r := make([]int, c)
	for i := range r {
		r[i] = rng.IntN(slack + 1)
	}
	slices.Sort(r)
	start := rng.IntN(n)
	for i := range c {
		b[(start+i*w+r[i])%n] = "x" + strconv.FormatUint(rng.Uint64()>>12, 36)
	}
	return b
}

// bandReplacements is the number of words to replace, at least w apart, in
// a page of n words for a copy at Jaccard close to target.
func bandReplacements(n int, target float64, w int) int {
	return int(math.Round(float64(n) * (1 - target) / (float64(w) * (1 + target))))
}

// BandPair returns a pair of pages whose looped w-word shingle sets have
// Jaccard similarity close to a J drawn uniformly from [jlo, jhi], for pages
// of n words, n drawn uniformly from [minWords, maxWords]: a page of n random
// words and a copy with c = round(n(1-J) / (w(1+J))) words replaced at
// positions at least w apart (looped), so that exactly w*c shingles of each
// page are not in the other and the pair's exact similarity is
// j = (n - w*c) / (n + w*c), which it returns (c = 0, an exact copy, gives 1).
// The family of band-limited pairs of the recall property test and of
// `crawler dedup curve`; it needs 0 <= jlo <= jhi <= 1 and
// 1 <= minWords <= maxWords, and a J with w*c > n is drawn again.
func BandPair(rng *rand.Rand, jlo, jhi float64, minWords, maxWords, w int) (a, b []string, j float64) {
	for {
		n := minWords + rng.IntN(maxWords-minWords+1)
		target := jlo + (jhi-jlo)*rng.Float64()
		c := bandReplacements(n, target, w)
		if w*c > n {
			continue
		}
		a, b = curvePair(rng, n, c, w)
		return a, b, float64(n-w*c) / float64(n+w*c)
	}
}

// BandCopy returns a copy of page a (looped w-word shingles, distinct words)
// at a Jaccard similarity close to a J drawn uniformly from [jlo, jhi], by
// BandPair's rule (c words replaced at least w apart), and that exact J,
// (n - w*c) / (n + w*c) for a's n words, which is inside [jlo, jhi] whenever
// a whole number of replacements reaches it. Copies of one page drawn one after
// the other are copies of it each, not of each other: the dense webs of
// internal/variantweb's band family.
func BandCopy(rng *rand.Rand, a []string, jlo, jhi float64, w int) (b []string, j float64) {
	n := len(a)
	for {
		target := jlo + (jhi-jlo)*rng.Float64()
		c := bandReplacements(n, target, w)
		if w*c > n {
			continue
		}
		// Rounding c can land just outside [jlo, jhi] (0.7929 for a target
		// near 0.80): the nearest count inside, when there is one (c = 0,
		// J = 1, is inside whenever jhi = 1).
		jOf := func(c int) float64 { return float64(n-w*c) / float64(n+w*c) }
		for c > 0 && jOf(c) < jlo {
			c--
		}
		for jOf(c) > jhi && w*(c+1) <= n && jOf(c+1) >= jlo {
			c++
		}
		return replaceApart(rng, a, c, w), jOf(c)
	}
}

// BandWords returns a page of n random words (distinct but with probability
// about n^2 / 2^53), as BandPair's pages are made.
func BandWords(rng *rand.Rand, n int) []string {
	a := make([]string, n)
	for i := range a {
		a[i] = strconv.FormatUint(rng.Uint64()>>12, 36)
	}
	return a
}

// RecallFloor returns the least number of successes of n independent
// trials, each succeeding with probability at least p, that a sound
// detector reaches but with probability at most alpha: the largest k with
// P(Binomial(n, p) < k) <= alpha (a sum of Bernoullis with success
// probabilities >= p is stochastically at least Binomial(n, p)). The recall
// property tests' floor per band (TestBandRecall, the crawl of the band web).
func RecallFloor(n int, p, alpha float64) int {
	cdf := 0.0 // P(Bin(n, p) < k)
	for k := 0; k <= n; k++ {
		next := cdf + binomialPMF(n, k, p)
		if next > alpha {
			return k
		}
		cdf = next
	}
	return n
}
