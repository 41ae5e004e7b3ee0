package mirror

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

var setsSeed = flag.Uint64("sets.seed", 0, "seed of TestMeasureSetsAsBefore (0: a new one, printed)")

func setsRand(t *testing.T) *rand.Rand {
	return rand.New(rand.NewPCG(testtools.FlagSeed(t, *setsSeed, "sets.seed"), 29))
}

// measureByMaps is what Measure is defined to return, computed with maps and
// none of the production code (the oracle of TestMeasureSetsAsBefore): the
// Jaccard similarity |A∩B| / |A∪B| of the two pages' shingle sets (repeats
// count once); their difference A△B, sorted; and the resemblance, the same
// ratio with the shingles of the difference that are systematic (counted in
// at least SystematicPairs earlier pairs' differences: counts) left out of
// the union. An empty union gives 1.
func measureByMaps(counts map[uint64]uint16, a, b []uint64) (resemblance, jaccard float64, diff []uint64) {
	inA, inB, union := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
	for _, v := range a {
		inA[v], union[v] = true, true
	}
	for _, v := range b {
		inB[v], union[v] = true, true
	}
	inter, systematic := 0, 0
	for v := range union {
		switch {
		case inA[v] && inB[v]:
			inter++
		default:
			diff = append(diff, v)
			if counts[v] >= SystematicPairs {
				systematic++
			}
		}
	}
	slices.Sort(diff)
	resemblance, jaccard = 1, 1
	if len(union) > 0 {
		jaccard = float64(inter) / float64(len(union))
	}
	if n := len(union) - systematic; n > 0 {
		resemblance = float64(inter) / float64(n)
	}
	return resemblance, jaccard, diff
}

// countsOf copies the systematic counts d has recorded for candidate key.
func countsOf(d *Detector, key string) map[uint64]uint16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dc := d.diffs[key]; dc != nil {
		return maps.Clone(dc.counts)
	}
	return nil
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
// the exact resemblance, Jaccard similarity and difference (measureByMaps),
// as the per-comparison computation before issue 29 did, pair after pair of
// a candidate, with the systematic differences building up as the pairs are
// recorded.
func TestMeasureSetsAsBefore(t *testing.T) {
	r := setsRand(t)
	discounted := 0 // comparisons where a systematic shingle was left out
	for round := range 20 {
		key := fmt.Sprintf("cand%d", round)
		d := NewDetector(Options{})
		banner := []uint64{r.Uint64(), r.Uint64(), r.Uint64()}
		for pair := range 30 {
			body := make([]uint64, []int{0, 1, 5, 200, 255, 256, 257, 1000, 3000}[r.IntN(9)])
			for i := range body {
				body[i] = r.Uint64() >> (r.IntN(2) * 40) // small hashes too
			}
			a, b := genPage(r, body, banner), genPage(r, body, banner)
			counts := countsOf(d, key)
			rw, jw, dw := measureByMaps(counts, a, b)
			mine := NewShingleSet(slices.Clone(a))
			rg, jg, dg := d.MeasureSets(key, mine, NewShingleSet(slices.Clone(b)))
			if rg != rw || jg != jw || !slices.Equal(dg, dw) {
				t.Fatalf("round %d pair %d (%d and %d shingles): got %v %v %d-diff, want %v %v %d-diff",
					round, pair, len(a), len(b), rg, jg, len(dg), rw, jw, len(dw))
			}
			if rw != jw {
				discounted++
			}
			// The same set again, against another page: exact too.
			c := genPage(r, body, banner)
			rw2, jw2, dw2 := measureByMaps(counts, a, c)
			rg2, jg2, dg2 := d.MeasureSets(key, mine, NewShingleSet(slices.Clone(c)))
			if rg2 != rw2 || jg2 != jw2 || !slices.Equal(dg2, dw2) {
				t.Fatalf("round %d pair %d, the set reused: got %v %v, want %v %v", round, pair, rg2, jg2, rw2, jw2)
			}
			d.RecordDifference(key, len(dg), dg)
		}
	}
	// The banner is in a pair's difference whenever one page of the two has it
	// (half the pairs), so it turns systematic within a candidate's first pairs:
	// a run that never left a shingle out has not tested the rule.
	t.Logf("%d comparisons left systematic shingles out", discounted)
	if discounted == 0 {
		t.Fatal("no comparison left a systematic shingle out of the union")
	}
}
