package mirror

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var setsSeed = flag.Uint64("sets.seed", 0, "seed of TestMeasureSetsAsBefore (0: a new one, printed)")

func setsRand(t *testing.T) *rand.Rand {
	seed := *setsSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (-sets.seed to replay)", seed)
	return rand.New(rand.NewPCG(seed, 29))
}

// measureBefore is Measure as it was before issue 29 (both sets sorted and
// compacted at every comparison), the reference of TestMeasureSetsAsBefore.
func measureBefore(d *Detector, key string, a, b []uint64) (resemblance, jaccard float64, diff []uint64) {
	slices.Sort(a)
	slices.Sort(b)
	a, b = slices.Compact(a), slices.Compact(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	var counts map[uint64]uint16
	if dc := d.diffs[key]; dc != nil {
		counts = dc.counts
	}
	inter, union := 0, 0
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var v uint64
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			v = a[i]
			i++
		case i == len(a) || b[j] < a[i]:
			v = b[j]
			j++
		default:
			inter++
			union++
			i++
			j++
			continue
		}
		diff = append(diff, v)
		if counts[v] < SystematicPairs {
			union++
		}
	}
	resemblance, jaccard = 1, 1
	if union > 0 {
		resemblance = float64(inter) / float64(union)
	}
	if inter+len(diff) > 0 {
		jaccard = float64(inter) / float64(inter+len(diff))
	}
	return resemblance, jaccard, diff
}

// genPage is a page's shingles: a shared body (the pair's common text), a
// banner systematic to the candidate, page-specific edits and repeats, in
// random order.
func genPage(r *rand.Rand, body, banner []uint64) []uint64 {
	var out []uint64
	for _, v := range body {
		if r.IntN(10) > 0 {
			out = append(out, v)
		}
	}
	if r.IntN(2) == 0 {
		out = append(out, banner...)
	}
	for range r.IntN(20) {
		out = append(out, r.Uint64())
	}
	for range r.IntN(5) {
		if len(out) > 0 {
			out = append(out, out[r.IntN(len(out))])
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestMeasureSetsAsBefore: comparing sets made once (NewShingleSet, then
// MeasureSets, as the crawl does for a page's several counterparts) gives
// the resemblance, Jaccard similarity and difference of the computation
// before issue 29, pair after pair of a candidate, with the systematic
// differences building up in both detectors alike.
func TestMeasureSetsAsBefore(t *testing.T) {
	r := setsRand(t)
	for round := range 20 {
		key := fmt.Sprintf("cand%d", round)
		old, cur := NewDetector(Options{}), NewDetector(Options{})
		banner := []uint64{r.Uint64(), r.Uint64(), r.Uint64()}
		for pair := range 30 {
			body := make([]uint64, []int{0, 1, 5, 200, 255, 256, 257, 1000, 3000}[r.IntN(9)])
			for i := range body {
				body[i] = r.Uint64() >> (r.IntN(2) * 40) // small hashes too
			}
			a, b := genPage(r, body, banner), genPage(r, body, banner)
			rw, jw, dw := measureBefore(old, key, slices.Clone(a), slices.Clone(b))
			mine := NewShingleSet(slices.Clone(a))
			rg, jg, dg := cur.MeasureSets(key, mine, NewShingleSet(slices.Clone(b)))
			if rg != rw || jg != jw || !slices.Equal(dg, dw) {
				t.Fatalf("round %d pair %d (%d and %d shingles): got %v %v %d-diff, want %v %v %d-diff",
					round, pair, len(a), len(b), rg, jg, len(dg), rw, jw, len(dw))
			}
			// The same set again, against another page: as before too.
			c := genPage(r, body, banner)
			rw2, jw2, dw2 := measureBefore(old, key, slices.Clone(a), slices.Clone(c))
			rg2, jg2, dg2 := cur.MeasureSets(key, mine, NewShingleSet(slices.Clone(c)))
			if rg2 != rw2 || jg2 != jw2 || !slices.Equal(dg2, dw2) {
				t.Fatalf("round %d pair %d, the set reused: got %v %v, want %v %v", round, pair, rg2, jg2, rw2, jw2)
			}
			old.RecordDifference(key, len(dw), dw)
			cur.RecordDifference(key, len(dg), dg)
		}
	}
}
