package dedup

import (
	"cmp"
	"math"
	"slices"
)

// Settlement: a candidate whose sketch estimate is near the threshold is
// decided on the exact Jaccard similarity of the two pages' looped shingle
// sets, computed by a Settler that the caller supplies (the crawl engine reads
// the candidate's stored text, the pure detector never does I/O).
//
// The sketch estimate of J from n min-hash samples is Binomial(n, J)/n. With
// n = 84 and the threshold t = 0.90, a rule on the estimate alone can only
// trade misses for false drops: "at least 76 of 84 agree" keeps a pair at
// J = 0.90 with probability P(Bin(84, 0.90) < 76) = 0.47 and drops a pair at
// J = 0.85 with probability 0.10 and one at J = 0.80 with 0.0078 (given that
// the filter proposed it).
//
// The decision rule (Detector.CheckAndAddSettled, with a Settler):
//
//   - A candidate with m < L equal samples is rejected without settling. L is
//     the largest count with P(Bin(n, t) < L) <= SettleMissBound (1e-6): for
//     n = 84, t = 0.90, L = 60 (estimate 0.714), and a pair at J >= 0.90
//     falls below it with probability P(Bin(84, 0.90) <= 59) = 4.1e-7
//     (less at higher J: 5.4e-8 at J = 0.91, 3.4e-10 at J = 0.93). One
//     more, L = 61, would miss with 1.6e-6.
//   - Every candidate with m >= L is settled: its exact Jaccard is computed
//     and it is a near duplicate when J >= t. Settlement therefore never
//     drops a pair with exact J < t. No estimate is accepted unsettled:
//     accepting 84 of 84 would meet the bound "never below J = 0.80"
//     (0.8^84 = 7.2e-9) but drop pairs at J = 0.88 with probability
//     0.88^84 = 2.2e-5 and at J = 0.85 with 1.2e-6, to save a settlement that
//     costs about 40 us for a page of 500 words (BENCHMARKS.md).
//   - Candidates in the band are settled best estimate first (ties: smaller
//     page id), at most MaxSettle (3) per page; the first with J >= t is the
//     original. A page with more than 3 candidates in the band and none of
//     the best 3 at J >= t is kept (a miss, not a false drop).
//   - When the Settler cannot tell (the candidate's text is unreadable), that
//     candidate falls back to the sketch rule (estimate >= t), as without a
//     Settler.
//
// End to end, a pair at J >= t is then dropped with probability at least
// the filter's P(k,s,r)(J) times 1 - 4.1e-7 (the simhash index adds
// candidates the filter misses), and a pair at J < t never is.
//
// SettleMissBound bounds the probability that a pair at exactly the threshold
// has a sketch estimate below the settled band.
const SettleMissBound = 1e-6

// MaxSettle is the most exact settlements one page costs.
const MaxSettle = 3

// Settler returns the exact Jaccard similarity of the looped shingle sets of
// the page being checked and the indexed page original (see ExactJaccard), or
// ok false when it cannot be computed. It is called with the Detector's lock
// held: it must not call back into the Detector (Shingles and Sign are fine).
type Settler func(original uint64) (j float64, ok bool)

// ExactJaccard returns the Jaccard similarity of the sets of shingle
// fingerprints in a and b (repeats count once; 1 when both are empty). It
// sorts a and b in place.
func ExactJaccard(a, b []uint64) float64 {
	slices.Sort(a)
	slices.Sort(b)
	var inter, union int
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			i = skipRun(a, i)
		case i == len(a) || b[j] < a[i]:
			j = skipRun(b, j)
		default:
			inter++
			i, j = skipRun(a, i), skipRun(b, j)
		}
		union++
	}
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

// skipRun returns the index after the run of values equal to s[i].
func skipRun(s []uint64, i int) int {
	v := s[i]
	for i++; i < len(s) && s[i] == v; i++ {
	}
	return i
}

// settleFloor returns L, the smallest number of equal samples (of n) that is
// settled: the largest L with P(Binomial(n, t) < L) <= SettleMissBound, and at
// most ceil(t*n), so that the band holds every estimate the sketch rule
// accepts.
func settleFloor(n int, t float64) int {
	top := int(math.Ceil(t*float64(n) - 1e-9))
	cdf := 0.0 // P(Bin(n, t) <= L-1)
	for l := 0; l <= top; l++ {
		// cdf is P(Bin < l); adding P(Bin = l) gives P(Bin < l+1).
		next := cdf + binomialPMF(n, l, t)
		if next > SettleMissBound {
			return l
		}
		cdf = next
	}
	return top
}

// binomialPMF is P(Binomial(n, p) = k), computed in log space.
func binomialPMF(n, k int, p float64) float64 {
	if p >= 1 {
		if k == n {
			return 1
		}
		return 0
	}
	if p <= 0 {
		if k == 0 {
			return 1
		}
		return 0
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// SettleFloor returns the number of equal samples from which a candidate is
// settled exactly (60 of 84 at the default threshold 0.90).
func (d *Detector) SettleFloor() int { return d.floor }

// Ranked is a candidate of the duplicate decision: an indexed page and the
// number of its sketch samples equal to the page's.
type Ranked struct {
	Equal int
	ID    uint64
}

// Settlement is one page's duplicate decision over its candidates, in one
// or more batches (the supershingle candidates, then the simhash ones; a
// shared index's rounds): the rule above, in the one place every index
// applies it (this package's Detector and the Redis backend's index).
// Settle is the page's Settler; nil decides on the best estimate alone, as
// without settlement. Each candidate is settled once, at most MaxSettle
// per page.
type Settlement struct {
	Settle Settler
	done   [MaxSettle]uint64 // candidates settled so far
	n      int
}

// Decide applies the rule to one batch of candidates (sorted in place: most
// equal samples first, ties to the smaller page id) out of samples samples,
// with floor the settled band's lowest count (Detector.SettleFloor), and
// returns the first near duplicate, found by method.
func (st *Settlement) Decide(cands []Ranked, samples, floor int, threshold float64, method string) (Decision, bool) {
	slices.SortFunc(cands, func(a, b Ranked) int {
		if c := cmp.Compare(b.Equal, a.Equal); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	near := func(r Ranked, j float64, settled bool) (Decision, bool) {
		return Decision{Class: Near, Original: r.ID, Similarity: j, Method: method, Settled: settled}, true
	}
	if st.Settle == nil {
		if len(cands) > 0 {
			if est := float64(cands[0].Equal) / float64(samples); est >= threshold {
				return near(cands[0], est, false)
			}
		}
		return Decision{}, false
	}
	for _, r := range cands {
		if r.Equal < floor {
			break // and so are the rest
		}
		if slices.Contains(st.done[:st.n], r.ID) {
			continue
		}
		if st.n == MaxSettle {
			break
		}
		st.done[st.n] = r.ID
		st.n++
		est := float64(r.Equal) / float64(samples)
		j, ok := st.Settle(r.ID)
		if !ok {
			// Unreadable: the sketch rule for this candidate.
			if est >= threshold {
				return near(r, est, false)
			}
			continue
		}
		// j is a ratio of integers; a pair exactly at the threshold
		// (540/600 = 0.90) must not fail on the last bit.
		if j >= threshold-1e-12 {
			return near(r, j, true)
		}
	}
	return Decision{}, false
}

// rank lists d.cands as Ranked candidates of sig (in d.ranked).
func (d *Detector) rank(sig *Signature) []Ranked {
	s := d.opt.Samples
	d.ranked = d.ranked[:0]
	for _, c := range d.cands {
		d.ranked = append(d.ranked, Ranked{equalSamples(sig.Sketch, d.sketches[int(c)*s:int(c+1)*s]), d.ids[c]})
	}
	return d.ranked
}
