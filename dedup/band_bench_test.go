package dedup

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// BenchmarkBandStage is the candidate stage's own cost per page, beside the
// seeds' filter's (issue 32; BENCHMARKS.md, "Issue 32: the candidate stage's
// cost"):
//
//   - keys/bands: dedup.BandKeys of an 84-sample sketch (12 keys of 7
//     samples); keys/filter: the filter's 15 subset keys of its 6
//     supershingles (comboKey), what a page is keyed by with bands -1;
//   - insert/*: one page's keys inserted into the supershingle index (12 or
//     15 entries; merges amortized over b.N pages);
//   - probe/*: one page's keys looked up in an index of 1 M pages keyed the
//     same way (random keys: the lookups of a page with no candidate).
//
// cpu-ns/page is the process's CPU time (getrusage) over the loop: on the
// shared machine it moves less than ns/op. Run the arms alternating, one
// process each (BENCHMARKS.md gives the loop).
func BenchmarkBandStage(b *testing.B) {
	o := DefaultOptions()
	d, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	sketches := make([][]uint64, 4096)
	supers := make([][]uint64, len(sketches))
	for i := range sketches {
		sketches[i] = make([]uint64, o.Samples)
		for j := range sketches[i] {
			sketches[i][j] = rng.Uint64()
		}
		supers[i] = make([]uint64, d.filter.K)
		d.sg.supershingles(sketches[i], supers[i])
	}
	bandKeys := func(i int, dst []uint64) []uint64 {
		return BandKeys(sketches[i&4095], o.Bands, o.BandRows, dst[:0])
	}
	subsetKeys := func(i int, dst []uint64) []uint64 {
		dst = dst[:0]
		for c, idx := range d.combos {
			dst = append(dst, comboKey(c, idx, supers[i&4095]))
		}
		return dst
	}
	arms := []struct {
		name string
		keys func(int, []uint64) []uint64
	}{{"filter", subsetKeys}, {"bands", bandKeys}}
	for _, arm := range arms {
		b.Run("keys/"+arm.name, func(b *testing.B) {
			var keys []uint64
			i := 0
			c0 := testtools.ProcessCPU()
			for b.Loop() {
				keys = arm.keys(i, keys)
				i++
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(len(keys)), "keys/page")
		})
	}
	for _, arm := range arms {
		b.Run("insert/"+arm.name, func(b *testing.B) {
			s := newSuperIndex()
			var keys []uint64
			i := 0
			c0 := testtools.ProcessCPU()
			for b.Loop() {
				keys = arm.keys(i, keys)
				for _, k := range keys {
					s.insert(k, uint32(i))
				}
				i++
			}
			reportCPU(b, c0)
		})
	}
	for _, arm := range arms {
		b.Run("probe/"+arm.name, func(b *testing.B) {
			pd, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			fill := rand.New(rand.NewPCG(23, 24))
			n := len(arm.keys(0, nil))
			pages := uint32(1 << 20)
			if smokeRun() {
				pages = smokePages
			}
			for slot := range pages {
				for range n {
					pd.super.insert(fill.Uint64(), slot)
				}
			}
			var keys []uint64
			hits := 0
			i := 0
			c0 := testtools.ProcessCPU()
			for b.Loop() {
				keys = arm.keys(i, keys)
				i++
				pd.superCandidates(keys, func(uint32) bool { hits++; return true })
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(hits)/float64(b.N), "false-hits/op")
		})
	}
}

// reportCPU reports the process's CPU time since c0 per iteration.
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64((testtools.ProcessCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/page")
}
