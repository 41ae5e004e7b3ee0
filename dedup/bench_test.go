package dedup

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

func textBytes(toks []string) int64 {
	n := int64(0)
	for _, t := range toks {
		n += int64(len(t)) + 1
	}
	return n
}

// BenchmarkShingle: token fingerprints, the exact fingerprint and the looped
// shingle fingerprints of a 2,000-word page; bytes are normalized text bytes.
// "fingerprint" is what Sign runs (signer.fingerprint: on CPUs with 512-bit
// carry-less multiplication, the vector token and shingle kernels);
// "table-onepass" is the portable code other CPUs run (the stream's and the
// sliding shingle's Rabin chains interleaved), and "table-twopass" the
// reference both must equal (tokens, then shingles).
func BenchmarkShingle(b *testing.B) {
	d := newTestDetector(b, nil)
	toks := benchTokens(2000, 1)
	u := make([]uint64, len(toks)+d.sg.w-1)
	out := make([]uint64, len(toks))
	lens := make([]uint8, len(toks))
	var stream []byte
	b.Run("fingerprint", func(b *testing.B) {
		b.SetBytes(textBytes(toks))
		b.ReportAllocs()
		for b.Loop() {
			d.sg.fingerprint(toks, u, out, lens, &stream)
		}
	})
	b.Run("table-onepass", func(b *testing.B) {
		setShingleVector(b, false)
		b.SetBytes(textBytes(toks))
		b.ReportAllocs()
		for b.Loop() {
			d.sg.fingerprint(toks, u, out, lens, &stream)
		}
	})
	b.Run("table-twopass", func(b *testing.B) {
		setShingleVector(b, false)
		b.SetBytes(textBytes(toks))
		b.ReportAllocs()
		for b.Loop() {
			d.sg.tokens(toks, u)
			for i := len(toks); i < len(u); i++ {
				u[i] = u[i-len(toks)]
			}
			d.sg.shingles(u, out)
		}
	})
}

// BenchmarkSign2000Words: the whole signature (exact, shingles, 84-sample
// min-hash, supershingles, simhash) of a 2,000-word page.
func BenchmarkSign2000Words(b *testing.B) {
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		b.Run(preset, func(b *testing.B) {
			d := newTestDetector(b, func(o *Options) { o.Filter.Preset = preset })
			toks := benchTokens(2000, 1)
			b.SetBytes(textBytes(toks))
			b.ReportAllocs()
			for b.Loop() {
				d.Sign(toks)
			}
		})
	}
}

// BenchmarkMinhash2000: the 84-sample sketch alone, over 2,000 distinct shingles.
func BenchmarkMinhash2000(b *testing.B) {
	sg := newSigner(DefaultOptions())
	rng := rand.New(rand.NewPCG(1, 1))
	xs := make([]uint64, 2000)
	for i := range xs {
		xs[i] = rng.Uint64()
	}
	out := make([]uint64, 84)
	b.ReportAllocs()
	for b.Loop() {
		sg.minhash(xs, out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/feature")
}

func BenchmarkSimhashPerFeature(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]uint64, 2000)
	for i := range xs {
		xs[i] = rng.Uint64()
	}
	var m [64]uint8
	b.SetBytes(8 * int64(len(xs)))
	b.ReportAllocs()
	for b.Loop() {
		simhash(xs, &m)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(xs)), "ns/feature")
}

// superFixture is a detector whose supershingle index holds 1 M pages (random
// supershingles; sketches are not needed to probe).
var superFixture = sync.OnceValue(func() *Detector {
	d, _ := New(DefaultOptions())
	rng := rand.New(rand.NewPCG(3, 4))
	super := make([]uint64, 6)
	for slot := range uint32(1 << 20) {
		for i := range super {
			super[i] = rng.Uint64()
		}
		for c, idx := range d.combos {
			d.super.insert(comboKey(c, idx, super), slot)
		}
	}
	return d
})

// BenchmarkSupershingleProbe: the 15 pair-key lookups of one page against 1 M
// indexed pages (keys computed from the supershingles included).
func BenchmarkSupershingleProbe(b *testing.B) {
	d := superFixture()
	rng := rand.New(rand.NewPCG(5, 6))
	queries := make([][]uint64, 4096)
	for i := range queries {
		queries[i] = make([]uint64, 6)
		for j := range queries[i] {
			queries[i][j] = rng.Uint64()
		}
	}
	var keys [maxCombinations]uint64
	hits := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := queries[i&4095]
		i++
		for c, idx := range d.combos {
			keys[c] = comboKey(c, idx, q)
		}
		d.superCandidates(keys[:len(d.combos)], func(uint32) bool { hits++; return true })
	}
	pages := float64(d.super.len()) / float64(len(d.combos))
	b.ReportMetric(float64(d.super.memoryBytes())/pages, "bytes/page")
	b.ReportMetric(float64(hits)/float64(b.N), "false-hits/op")
}

// simhashWorkload is a set of stored fingerprints with planted near-duplicates
// of query pages whose simhash and margins come from real feature sets.
type simhashWorkload struct {
	base    []uint64
	qfp     []uint64
	qmargin [][64]uint8
	truth   [][]uint32 // exhaustive answers at k = 3
}

var workloads sync.Map // size -> *simhashWorkload

func simhashFixture(n int) *simhashWorkload {
	if w, ok := workloads.Load(n); ok {
		return w.(*simhashWorkload)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	w := &simhashWorkload{base: make([]uint64, n)}
	for i := range w.base {
		w.base[i] = rng.Uint64()
	}
	const queries = 4000 // recall's standard error about 0.0035 at 0.95
	feats := make([]uint64, 400)
	var m [64]uint8
	for q := range queries {
		for i := range feats {
			feats[i] = rng.Uint64()
		}
		var qm [64]uint8
		qfp := simhash(feats, &qm)
		// A near-duplicate: replace 0..8 of 400 features (J >= 0.96).
		for range q % 9 {
			feats[rng.IntN(len(feats))] = rng.Uint64()
		}
		w.base[rng.IntN(n)] = simhash(feats, &m)
		w.qfp = append(w.qfp, qfp)
		w.qmargin = append(w.qmargin, qm)
	}
	w.truth = make([][]uint32, queries)
	for s, v := range w.base {
		for q, fp := range w.qfp {
			if bits.OnesCount64(v^fp) <= 3 {
				w.truth[q] = append(w.truth[q], uint32(s))
			}
		}
	}
	workloads.Store(n, w)
	return w
}

// sink keeps values that benchmarks compute only to load memory.
var sink uint64

// BenchmarkSimhashSearch: BPHS and PSM side by side; queries/s, recall against
// exhaustive search, RAM per fingerprint. 10 M with HORSESHOE_BENCH_10M=1.
func BenchmarkSimhashSearch(b *testing.B) {
	sizes := []int{1 << 20}
	if os.Getenv("HORSESHOE_BENCH_10M") == "1" {
		sizes = append(sizes, 10<<20)
	}
	for _, n := range sizes {
		for _, ix := range []struct {
			name string
			mk   func() SimhashIndex
		}{
			{"bphs-G4g1", func() SimhashIndex { return NewBPHS(4, 1) }},
			{"bphs-G5g2", func() SimhashIndex { return NewBPHS(5, 2) }},
			{"psm-4", func() SimhashIndex { return NewPSM(4, DefaultPSMSigma) }},
			{"psm-6", func() SimhashIndex { return NewPSM(6, DefaultPSMSigma) }},
			{"psm-8", func() SimhashIndex { return NewPSM(8, DefaultPSMSigma) }},
			{"psm-9", func() SimhashIndex { return NewPSM(9, DefaultPSMSigma) }},
			{"psm-10", func() SimhashIndex { return NewPSM(10, DefaultPSMSigma) }},
			{"psm-16", func() SimhashIndex { return NewPSM(16, DefaultPSMSigma) }},
			{"psm-64", func() SimhashIndex { return NewPSM(64, DefaultPSMSigma) }},
			{"psm-256", func() SimhashIndex { return NewPSM(256, DefaultPSMSigma) }},
			// One fingerprint per header (t = log2 n) instead of about four.
			{"psm-spare0-8", func() SimhashIndex { return newPSM(8, DefaultPSMSigma, 0) }},
			{"psm-spare3-8", func() SimhashIndex { return newPSM(8, DefaultPSMSigma, 3) }},
		} {
			b.Run(fmt.Sprintf("%s/n=%dM", ix.name, n>>20), func(b *testing.B) {
				w := simhashFixture(n)
				idx := ix.mk()
				start := time.Now()
				for s, v := range w.base {
					idx.Add(v, uint32(s))
				}
				build := time.Since(start)
				runtime.GC() // not during the timed queries: the fixture is gigabytes at 10 M
				found, want, probes := 0, 0, 0
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				var hit []uint32
				visit := func(s uint32) bool { hit = append(hit, s); return true }
				var warm uint64
				for b.Loop() {
					q := i % len(w.qfp)
					i++
					// The query's signature is in cache, as it is in the
					// Detector, which signs the page just before searching:
					// load the next query's margins during this one.
					warm += uint64(w.qmargin[i%len(w.qfp)][0])
					hit = hit[:0]
					probes += idx.Search(w.qfp[q], &w.qmargin[q], 3, visit)
					for _, s := range w.truth[q] {
						want++
						if slices.Contains(hit, s) {
							found++
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
				sink += warm
				if want > 0 {
					b.ReportMetric(float64(found)/float64(want), "recall")
				}
				b.ReportMetric(float64(probes)/float64(b.N), "lookups/query")
				b.ReportMetric(float64(idx.MemoryBytes())/float64(n), "bytes/fp")
				b.ReportMetric(build.Seconds()*1e9/float64(n), "insert-ns/fp")
			})
		}
	}
}

// BenchmarkPSMLookups: the CPU part of a PSM query at 1 M fingerprints
// (t = 18 header bits): ranking the header bits by the query's margins and
// enumerating the flip sets in VOSH order, for budgets 8 and 16; no index
// memory is touched.
func BenchmarkPSMLookups(b *testing.B) {
	for _, budget := range []int{8, 16} {
		b.Run(fmt.Sprintf("budget=%d", budget), func(b *testing.B) {
			p := NewPSM(budget, DefaultPSMSigma)
			p.idx.t = 18
			rng := rand.New(rand.NewPCG(9, 10))
			margins := make([][64]uint8, 1024)
			for i := range margins {
				for j := range margins[i] {
					margins[i][j] = uint8(rng.IntN(256))
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p.lookups(uint64(i)*0x9E3779B97F4A7C15, &margins[i&1023], 3, budget-1)
				i++
			}
		})
	}
}
