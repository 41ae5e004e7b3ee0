package dedup

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
)

// synthPages makes synthetic signatures for index growth benchmarks: random
// 84-sample sketches (their supershingles computed as Sign does), random
// simhashes and margins, and a planted near-duplicate of an indexed page
// (2 of 84 samples changed, J about 0.976) every nearEvery pages.
type synthPages struct {
	d         *Detector
	rng       *rand.Rand
	nearEvery int
	n         int
}

func (g *synthPages) next() (sig *Signature, planted bool) {
	d := g.d
	g.n++
	sig = &Signature{Sketch: make([]uint64, d.opt.Samples), Super: make([]uint64, d.filter.K), Words: 500}
	sig.Exact = g.rng.Uint64()
	sig.Simhash = g.rng.Uint64()
	for i := range sig.Margins {
		sig.Margins[i] = uint8(g.rng.IntN(256))
	}
	if pages := len(d.ids); g.nearEvery > 0 && g.n%g.nearEvery == 0 && pages > 0 {
		slot := g.rng.IntN(pages)
		copy(sig.Sketch, d.sketches[slot*d.opt.Samples:(slot+1)*d.opt.Samples])
		for range 2 {
			sig.Sketch[g.rng.IntN(len(sig.Sketch))] = g.rng.Uint64()
		}
		planted = true
	} else {
		for i := range sig.Sketch {
			sig.Sketch[i] = g.rng.Uint64()
		}
	}
	d.sg.supershingles(sig.Sketch, sig.Super)
	return sig, planted
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkIndexGrowth: the cost of deciding one page (CheckAndAdd: exact
// map, the index keys (12 band keys by default; 15 supershingle pair keys
// with the band stage off), PSM simhash probes, verification of the
// candidates against stored sketches) when the detector already holds n pages,
// and the memory the index holds per page. 10 k to 1 M pages; 10 M with
// HORSESHOE_BENCH_10M=1 (about 10 GB live; make bench runs it when 16 GB are
// available). One op is one page; 1 in 10 pages is a
// planted near-duplicate of an indexed page.
func BenchmarkIndexGrowth(b *testing.B) {
	sizes := []int{10_000, 100_000, 1_000_000}
	if os.Getenv("HORSESHOE_BENCH_10M") == "1" {
		sizes = append(sizes, 10_000_000)
	}
	if smokeRun() {
		sizes = sizes[:1] // make bench-smoke: keep it compiling and quick
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pages=%s", countLabel(n)), func(b *testing.B) {
			d, err := New(DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			g := &synthPages{d: d, rng: rand.New(rand.NewPCG(uint64(n), 11)), nearEvery: 10}
			h0 := heapInUse()
			start := time.Now()
			for i := range n {
				sig, _ := g.next()
				d.CheckAndAdd(uint64(i+1), sig)
			}
			fill := time.Since(start)
			h1 := heapInUse()
			st := d.Stats()

			// Queries are generated ahead in batches, outside the timer.
			const batch = 4096
			type query struct {
				sig     *Signature
				planted bool
			}
			qs := make([]query, 0, batch)
			refill := func() {
				qs = qs[:0]
				for range batch {
					s, p := g.next()
					qs = append(qs, query{s, p})
				}
			}
			refill()
			planted, found := 0, 0
			id := uint64(n + 1)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if i == len(qs) {
					b.StopTimer()
					refill()
					i = 0
					b.StartTimer()
				}
				q := qs[i]
				i++
				dec := d.CheckAndAdd(id, q.sig)
				id++
				if q.planted {
					planted++
					if dec.Class == Near {
						found++
					}
				}
			}
			b.StopTimer()
			pages := float64(st.Pages)
			b.ReportMetric(float64(fill.Nanoseconds())/float64(n), "fill-ns/page")
			b.ReportMetric(float64(st.SupershingleBytes)/pages, "super-B/page")
			b.ReportMetric(float64(st.SimhashBytes)/pages, "simhash-B/page")
			b.ReportMetric(float64(st.SketchBytes)/pages, "sketch-B/page")
			b.ReportMetric(float64(h1-min(h0, h1))/pages, "heap-B/page")
			if planted > 0 {
				b.ReportMetric(float64(found)/float64(planted), "near-recall")
			}
		})
	}
}

// smokePages is the index size of the benchmarks that measure at a million
// pages, under make bench-smoke (smokeRun): enough to run every path.
const smokePages = 1 << 14

// smokeRun reports whether the benchmarks run once each (-benchtime 1x, as
// make bench-smoke does).
func smokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}

func countLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	default:
		return fmt.Sprint(n)
	}
}
