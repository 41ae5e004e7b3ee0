package dedup

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
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
	d, table := newTestDetector(b, nil), newTestDetectorWith(b, portableKernels, nil)
	toks := benchTokens(2000, 1)
	u := make([]uint64, len(toks)+d.sg.w-1)
	out := make([]uint64, len(toks))
	lens := make([]uint8, len(toks))
	var stream []byte
	for _, run := range []struct {
		name string
		sg   *signer
	}{{"fingerprint", d.sg}, {"table-onepass", table.sg}} {
		b.Run(run.name, func(b *testing.B) {
			b.SetBytes(textBytes(toks))
			b.ReportAllocs()
			for b.Loop() {
				run.sg.fingerprint(toks, u, out, lens, &stream)
			}
		})
	}
	b.Run("table-twopass", func(b *testing.B) {
		b.SetBytes(textBytes(toks))
		b.ReportAllocs()
		for b.Loop() {
			table.sg.tokens(toks, u)
			for i := len(toks); i < len(u); i++ {
				u[i] = u[i-len(toks)]
			}
			table.sg.shingles(u, out)
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
	sg := newSigner(DefaultOptions(), hostKernels)
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
	n := uint32(1 << 20)
	if smokeRun() {
		n = smokePages
	}
	for slot := range n {
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

var workloads sync.Map // [size, queries] -> *simhashWorkload

// simhashFixture is n stored fingerprints and 4,000 queries (recall's standard
// error about 0.0035 at 0.95).
func simhashFixture(n int) *simhashWorkload { return simhashFixtureQ(n, 4000) }

// simhashFixtureQ is n stored fingerprints and the given number of queries,
// each with a planted near-duplicate.
func simhashFixtureQ(n, queries int) *simhashWorkload {
	if w, ok := workloads.Load([2]int{n, queries}); ok {
		return w.(*simhashWorkload)
	}
	seed := uint64(7) // the 4,000-query fixture's, as before
	if queries != 4000 {
		seed = uint64(queries)
	}
	rng := rand.New(rand.NewPCG(uint64(n), seed))
	w := &simhashWorkload{base: make([]uint64, n)}
	for i := range w.base {
		w.base[i] = rng.Uint64()
	}
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
	// Exhaustive, by pigeonhole: within distance 3, two fingerprints agree
	// on at least one of the four 16-bit blocks, so each stored value is
	// compared with the queries that share one of its blocks (each pair
	// once: at its first agreeing block).
	w.truth = make([][]uint32, queries)
	var byBlock [4]map[uint16][]int
	for b := range byBlock {
		byBlock[b] = make(map[uint16][]int)
		for q, fp := range w.qfp {
			key := uint16(fp >> (16 * b))
			byBlock[b][key] = append(byBlock[b][key], q)
		}
	}
	for s, v := range w.base {
		for b := range byBlock {
			for _, q := range byBlock[b][uint16(v>>(16*b))] {
				x := v ^ w.qfp[q]
				if bits.OnesCount64(x) <= 3 && firstZeroBlock(x) == b {
					w.truth[q] = append(w.truth[q], uint32(s))
				}
			}
		}
	}
	workloads.Store([2]int{n, queries}, w)
	return w
}

// simhashIndexes keeps built PSM indexes (about 140 MB each at 10 M, 1.4 GB
// for all of the benchmark's PSM settings, held to the end of the process)
// by name without mode and size; BPHS's are rebuilt (1.4 GB at 10 M).
var simhashIndexes sync.Map

type builtIndex struct {
	idx   SimhashIndex
	build time.Duration
}

// firstZeroBlock is the first 16-bit block of x that is zero (4 if none).
func firstZeroBlock(x uint64) int {
	b := 0
	for b < 4 && uint16(x>>(16*b)) != 0 {
		b++
	}
	return b
}

// sink keeps values that benchmarks compute only to load memory.
var sink uint64

// BenchmarkSimhashSearch: BPHS and PSM side by side; queries/s, recall against
// exhaustive search, RAM per fingerprint. 10 M with HORSESHOE_BENCH_10M=1.
// Each query collects all its matches (the seed's PSM_A), except in the
// -first runs, which stop at the first (PSM_F; their query-recall is the
// share of queries with a match that found one, as the seed measures it).
func BenchmarkSimhashSearch(b *testing.B) {
	sizes := []int{1 << 20}
	if os.Getenv("HORSESHOE_BENCH_10M") == "1" {
		sizes = append(sizes, 10<<20)
	}
	if smokeRun() {
		sizes = []int{smokePages}
	}
	psm := func(budget int) func() SimhashIndex {
		return func() SimhashIndex { return NewPSM(budget, DefaultPSMSigma) }
	}
	for _, n := range sizes {
		for _, ix := range []struct {
			name  string
			mk    func() SimhashIndex
			first bool // stop at the first match
		}{
			{name: "bphs-G4g1", mk: func() SimhashIndex { return NewBPHS(4, 1) }},
			{name: "bphs-G5g2", mk: func() SimhashIndex { return NewBPHS(5, 2) }},
			{name: "psm-4", mk: psm(4)},
			{name: "psm-6", mk: psm(6)},
			{name: "psm-8", mk: psm(8)},
			{name: "psm-9", mk: psm(9)},
			{name: "psm-10", mk: psm(10)},
			{name: "psm-16", mk: psm(16)},
			{name: "psm-64", mk: psm(64)},
			{name: "psm-256", mk: psm(256)},
			{name: "psm-8-first", mk: psm(8), first: true},
			{name: "psm-9-first", mk: psm(9), first: true},
			// One fingerprint per header (t = log2 n) instead of about four.
			{name: "psm-spare0-8", mk: func() SimhashIndex { return newPSM(8, DefaultPSMSigma, 0) }},
			{name: "psm-spare3-8", mk: func() SimhashIndex { return newPSM(8, DefaultPSMSigma, 3) }},
		} {
			b.Run(fmt.Sprintf("%s/n=%dM", ix.name, n>>20), func(b *testing.B) {
				w := simhashFixture(n)
				// Runs of one index (-count, the -first run of a budget)
				// share it: many short samples of the same memory at one
				// build each. Only the run that built it reports
				// insert-ns/fp.
				key := fmt.Sprintf("%s/%d", strings.TrimSuffix(ix.name, "-first"), n)
				built, cached := simhashIndexes.Load(key)
				if !cached {
					idx := ix.mk()
					start := time.Now()
					for s, v := range w.base {
						idx.Add(v, uint32(s))
					}
					built = builtIndex{idx, time.Since(start)}
					if _, psm := idx.(*PSM); psm {
						simhashIndexes.Store(key, built)
					}
				}
				idx, build := built.(builtIndex).idx, built.(builtIndex).build
				runtime.GC() // not during the timed queries: the fixture is gigabytes at 10 M
				found, want, probes := 0, 0, 0
				// hits[q] holds query q's matches of the current round.
				hits := make([][]uint32, len(w.qfp))
				score := func(q int) {
					if ix.first {
						if len(w.truth[q]) > 0 {
							want++
							found += min(len(hits[q]), 1)
						}
					} else {
						for _, s := range w.truth[q] {
							want++
							if slices.Contains(hits[q], s) {
								found++
							}
						}
					}
					hits[q] = hits[q][:0]
				}
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				var q int
				visit := func(s uint32) bool { hits[q] = append(hits[q], s); return !ix.first }
				var warm uint64
				for b.Loop() {
					q = i % len(w.qfp)
					i++
					// The query's signature is in cache, as it is in the
					// Detector, which signs the page just before searching:
					// load the next query's margins during this one.
					warm += uint64(w.qmargin[i%len(w.qfp)][0])
					probes += idx.Search(w.qfp[q], &w.qmargin[q], 3, visit)
					score(q)
				}
				sink += warm
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
				if want > 0 && ix.first {
					b.ReportMetric(float64(found)/float64(want), "query-recall")
				} else if want > 0 {
					b.ReportMetric(float64(found)/float64(want), "recall")
				}
				b.ReportMetric(float64(probes)/float64(b.N), "lookups/query")
				b.ReportMetric(float64(idx.MemoryBytes())/float64(n), "bytes/fp")
				if !cached {
					b.ReportMetric(build.Seconds()*1e9/float64(n), "insert-ns/fp")
				}
			})
		}
	}
}

// BenchmarkSimhashSearchCold: PSM as seed 003 measured it (Table 2: 10 M
// distinct queries against 60 M stored fingerprints): every query a distinct
// page, n/10 of them, none repeated while b.N is at most n/10 (-benchtime
// 1048576x at 10 M runs each query once), so the buckets a query reads are
// not in cache from an earlier query. BenchmarkSimhashSearch cycles 4,000
// queries, whose 32,000 buckets stay in cache at 10 M: it measures the CPU of
// a query, this its cost in a crawl. 10 M with HORSESHOE_BENCH_10M=1.
func BenchmarkSimhashSearchCold(b *testing.B) {
	n := 1 << 20
	if os.Getenv("HORSESHOE_BENCH_10M") == "1" {
		n = 10 << 20
	}
	if smokeRun() {
		n = smokePages
	}
	w := simhashFixtureQ(n, n/10)
	for _, ix := range []struct {
		name   string
		budget int
		first  bool
	}{{"psm-8", 8, false}, {"psm-9", 9, false}, {"psm-16", 16, false}, {"psm-8-first", 8, true}, {"psm-9-first", 9, true}} {
		b.Run(fmt.Sprintf("%s/n=%dM", ix.name, n>>20), func(b *testing.B) {
			idx := NewPSM(ix.budget, DefaultPSMSigma)
			for s, v := range w.base {
				idx.Add(v, uint32(s))
			}
			runtime.GC()
			found, want, probes := 0, 0, 0
			var hits []uint32
			visit := func(s uint32) bool { hits = append(hits, s); return !ix.first }
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				q := i % len(w.qfp)
				i++
				hits = hits[:0]
				probes += idx.Search(w.qfp[q], &w.qmargin[q], 3, visit)
				if ix.first {
					if len(w.truth[q]) > 0 {
						want++
						found += min(len(hits), 1)
					}
					continue
				}
				for _, s := range w.truth[q] {
					want++
					if slices.Contains(hits, s) {
						found++
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			if ix.first {
				b.ReportMetric(float64(found)/float64(max(want, 1)), "query-recall")
			} else {
				b.ReportMetric(float64(found)/float64(max(want, 1)), "recall")
			}
			b.ReportMetric(float64(probes)/float64(b.N), "lookups/query")
			b.ReportMetric(float64(min(b.N, len(w.qfp)))/float64(b.N), "distinct-queries/query")
		})
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
				p.buf.q.hds = p.lookups(uint64(i)*0x9E3779B97F4A7C15, &margins[i&1023], 3, budget-1, p.buf.q.hds)
				i++
			}
		})
	}
}

// TestSimhashFixtureTruth: the benchmark's pigeonhole answers are the
// exhaustive ones (a smaller fixture, compared pair by pair).
func TestSimhashFixtureTruth(t *testing.T) {
	t.Parallel()
	w := simhashFixture(1 << 14)
	pairs := 0
	for q, fp := range w.qfp {
		var want []uint32
		for s, v := range w.base {
			if bits.OnesCount64(v^fp) <= 3 {
				want = append(want, uint32(s))
			}
		}
		if !slices.Equal(w.truth[q], want) {
			t.Fatalf("query %d: truth %v, exhaustive %v", q, w.truth[q], want)
		}
		pairs += len(want)
	}
	if pairs < len(w.qfp)/2 {
		t.Fatalf("only %d pairs within distance 3 among %d queries", pairs, len(w.qfp))
	}
}

// BenchmarkDetectorPage is the detector's CPU per page, side by side with the
// band stage off (the seeds' filter alone, "filter") and on ("bands", the
// default): Sign and CheckAndAddSettled of a page of 200 to 3,000 words
// against an index of 100 k pages (random sketches), with exact settlement
// (the Settler shingles both pages, as the crawl's does after reading the
// stored text). In "unique" every page is new; in "near10" one page in ten
// is a copy of an indexed page at J uniform in [0.80, 1] (BandPair), the
// band stage's extra settlements (J in [0.80, 0.90)) included. cpu-ns/page
// is the process's CPU time (getrusage) over the timed part: on a shared
// machine it moves less than ns/op. Run the two one after the other, several
// times, and take medians (BENCHMARKS-dedup.md).
func BenchmarkDetectorPage(b *testing.B) {
	for _, wl := range []struct {
		name string
		near int // one page in near is a near copy (0: none)
	}{{"unique", 0}, {"near10", 10}} {
		for _, st := range []struct {
			name  string
			bands int
		}{{"filter", -1}, {"bands", 0}} {
			b.Run(wl.name+"/"+st.name, func(b *testing.B) {
				o := DefaultOptions()
				o.Bands = st.bands
				d := detectorPageFixture(b, o)
				rng := rand.New(rand.NewPCG(11, 12))
				texts := map[uint64][]string{}
				var sa, sb []uint64
				id := uint64(1 << 40)
				var cpu time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					id += 2
					a, q, _ := BandPair(rng, 0.80, 1, 200, 3000, o.ShingleWords)
					if wl.near == 0 || i%wl.near != 0 {
						q = a // a new page
					} else {
						d.Add(id-1, d.Sign(a))
						texts[id-1] = a
					}
					b.StartTimer()
					c0 := testtools.ProcessCPU()
					settle := func(orig uint64) (float64, bool) {
						t, ok := texts[orig]
						if !ok {
							return 0, false
						}
						sa, sb = d.Shingles(t, sa[:0]), d.Shingles(q, sb[:0])
						return ExactJaccard(sa, sb), true
					}
					d.CheckAndAddSettled(id, d.Sign(q), settle)
					cpu += testtools.ProcessCPU() - c0
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/page")
			})
		}
	}
}

// detectorPageFixture is a Detector of options o holding 100 k pages with
// random sketches (their supershingles and band keys from them).
func detectorPageFixture(b *testing.B, o Options) *Detector {
	b.Helper()
	d, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	n := uint64(100_000)
	if smokeRun() {
		n = smokePages
	}
	for id := range n {
		sig := &Signature{Exact: rng.Uint64(), Words: 1000, Sketch: make([]uint64, o.Samples), Super: make([]uint64, d.filter.K), Simhash: rng.Uint64()}
		for i := range sig.Sketch {
			sig.Sketch[i] = rng.Uint64()
		}
		d.sg.supershingles(sig.Sketch, sig.Super)
		d.Add(id+1, sig)
	}
	return d
}
