package dedup

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestVOSHSeedExample: weights (1.9, 0.01, -0.5) for bits 1..3 are flipped in
// the order 2, 3, 1 (seed 003, section 4).
func TestVOSHSeedExample(t *testing.T) {
	t.Parallel()
	var margins [64]uint8
	for i, w := range []float64{1.9, 0.01, -0.5} {
		if w < 0 {
			w = -w
		}
		margins[i] = uint8(w*32 + 0.5)
	}
	order := []uint8{0, 1, 2}
	logit := make([]int64, 3)
	rankBits(order, logit, &margins, fixLogits(flipLogits(DefaultPSMSigma)))
	if want := []uint8{1, 2, 0}; !slices.Equal(order, want) {
		t.Errorf("flip order (0-based bits) %v, want %v (bits 2, 3, 1)", order, want)
	}
	if !(logit[0] > logit[1] && logit[1] > logit[2]) {
		t.Errorf("logits not decreasing: %v", logit)
	}
}

func voshLevels(root []uint8, b, levels int) [][]string {
	var out [][]string
	cur := [][]uint8{root}
	for range levels {
		var names []string
		var next [][]uint8
		for _, s := range cur {
			name := ""
			for i, v := range s {
				if i > 0 {
					name += ","
				}
				name += string(rune('1' + v))
			}
			names = append(names, name)
			l, r, hl, hr := voshChildren(s, b)
			if hl {
				next = append(next, slices.Clone(l[:len(s)]))
			}
			if hr {
				next = append(next, slices.Clone(r[:len(s)]))
			}
		}
		out = append(out, names)
		cur = next
	}
	return out
}

// TestVOSHTreeLevels pins the top five levels of the VOSH trees for h = 1, 2, 3
// (the seed's Figure 2), built by Algorithm 2; sets are 1-based.
func TestVOSHTreeLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		root []uint8
		want [][]string
	}{
		{[]uint8{0}, [][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"5"}}},
		{[]uint8{0, 1}, [][]string{{"1,2"}, {"1,3"}, {"1,4", "2,3"}, {"1,5", "2,4"}, {"1,6", "2,5", "3,4"}}},
		{[]uint8{0, 1, 2}, [][]string{{"1,2,3"}, {"1,2,4"}, {"1,2,5", "1,3,4"}, {"1,2,6", "1,3,5", "2,3,4"},
			{"1,2,7", "1,3,6", "1,4,5", "2,3,5"}}},
	} {
		got := voshLevels(tc.root, 9, 5)
		if !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
			t.Errorf("h=%d: levels %v, want %v", len(tc.root), got, tc.want)
		}
	}
}

// TestVOSHEnumeratesEverySubsetOnceInOrder: the heap yields every subset of
// sizes 1..h exactly once, in non-increasing probability.
func TestVOSHEnumeratesEverySubsetOnceInOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for b := 1; b <= 9; b++ {
		for h := 1; h <= 4; h++ {
			logit := make([]float64, b)
			for i := range logit {
				logit[i] = -rng.Float64() * 10
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(logit)))
			fix := make([]int64, b)
			for i, l := range logit {
				fix[i] = toFix(l)
			}
			var v voshHeap
			v.reset(fix, h)
			seen := map[uint64]bool{}
			prev := 1e300
			for {
				set, size, ok := v.next()
				if !ok {
					break
				}
				s := unpackRanks(set, size)
				var mask uint64
				score := 0.0
				for _, r := range s {
					mask |= 1 << r
					score += logit[r]
				}
				if seen[mask] {
					t.Fatalf("b=%d h=%d: subset %v twice", b, h, s)
				}
				seen[mask] = true
				if score > prev+1e-9 {
					t.Fatalf("b=%d h=%d: %v (%.3f) after a less likely subset (%.3f)", b, h, s, score, prev)
				}
				prev = score
			}
			want := 0
			for i := 1; i <= min(h, b); i++ {
				want += int(binomial(b, i))
			}
			if len(seen) != want {
				t.Errorf("b=%d h=%d: %d subsets, want %d", b, h, len(seen), want)
			}
		}
	}
}

// TestSimhashIndexesAgainstExhaustive plants neighbours at distances 0..4 among
// random fingerprints, inserted online across delta merges.
func TestSimhashIndexesAgainstExhaustive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 24))
	const n = 20000
	fps := make([]uint64, n)
	for i := range fps {
		fps[i] = rng.Uint64()
	}
	type query struct {
		fp   uint64
		want []uint32
	}
	var queries []query
	for q := range 300 {
		src := rng.IntN(n)
		fp := fps[src]
		for range q % 5 {
			fp ^= 1 << rng.IntN(64)
		}
		queries = append(queries, query{fp: fp})
	}
	for i := range queries {
		for s, v := range fps {
			if bits.OnesCount64(v^queries[i].fp) <= 3 {
				queries[i].want = append(queries[i].want, uint32(s))
			}
		}
	}
	for _, tc := range []struct {
		name string
		idx  SimhashIndex
	}{
		{"bphs G4 g1", NewBPHS(4, 1)},
		{"bphs G5 g2", NewBPHS(5, 2)},
		{"bphs G6 g3", NewBPHS(6, 3)},
		{"psm unlimited", NewPSM(1<<20, DefaultPSMSigma)},
	} {
		for s, v := range fps {
			tc.idx.Add(v, uint32(s))
		}
		if tc.idx.Len() != n {
			t.Fatalf("%s: Len %d", tc.name, tc.idx.Len())
		}
		for _, q := range queries {
			var got []uint32
			tc.idx.Search(q.fp, nil, 3, func(s uint32) bool { got = append(got, s); return true })
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, q.want) {
				t.Fatalf("%s: query %#x found %v, want %v", tc.name, q.fp, got, q.want)
			}
		}
		if tc.idx.MemoryBytes() < int64(n)*12 {
			t.Errorf("%s: memory %d bytes for %d fingerprints is implausibly small", tc.name, tc.idx.MemoryBytes(), n)
		}
	}
}

func TestPSMBudgetAndEarlyStop(t *testing.T) {
	t.Parallel()
	p := NewPSM(5, DefaultPSMSigma)
	for i := range 5000 {
		p.Add(uint64(i)*0x9e3779b97f4a7c15, uint32(i))
	}
	if probes := p.Search(12345, nil, 3, func(uint32) bool { return true }); probes != 5 {
		t.Errorf("probes %d, want the budget 5", probes)
	}
	k77 := uint64(77)
	target := k77 * 0x9e3779b97f4a7c15
	calls := 0
	probes := p.Search(target, nil, 3, func(uint32) bool { calls++; return false })
	if calls != 1 || probes != 1 {
		t.Errorf("exact hit: %d visits, %d probes; want 1, 1", calls, probes)
	}
}

// TestPSMRanksOnlyWhatTheBudgetReaches: the lookups Search makes, which rank
// only the budget-1 most probable header bits, are those of ranking all t of
// them, in the same order: for distinct margins, for margins with many ties
// and zeros (logit 0), and without margins, where every single flip must
// come before any double.
func TestPSMRanksOnlyWhatTheBudgetReaches(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1 << 12, 1 << 16} {
		for _, budget := range []int{2, 4, 8, 16, 64} {
			p := NewPSM(budget, DefaultPSMSigma)
			for i := range n {
				p.Add(rng.Uint64(), uint32(i))
			}
			tb := int(p.idx.t)
			for q := range 300 {
				var margins [64]uint8
				switch q % 3 {
				case 0: // distinct
					for i, v := range rng.Perm(256)[:64] {
						margins[i] = uint8(v)
					}
				case 1: // ties, a third of them zero
					for i := range margins {
						margins[i] = uint8(max(0, rng.IntN(6)-2) * 40)
					}
				}
				mp := &margins
				if q%3 == 2 {
					mp = nil
				}
				fp := rng.Uint64()
				for k := 1; k <= 3; k++ {
					full := slices.Clone(p.lookups(fp, mp, k, tb, nil))
					p.Search(fp, mp, k, func(uint32) bool { return true })
					used := p.buf.q.hds
					if !slices.Equal(full, used) {
						t.Fatalf("n=%d budget=%d k=%d query %d: Search looked up %x, ranking all %d bits gives %x",
							n, budget, k, q, used, tb, full)
					}
					if want := min(budget, 1+flipSets(tb, k)); len(used) != want {
						t.Fatalf("n=%d budget=%d k=%d: %d lookups, want %d", n, budget, k, len(used), want)
					}
					if mp == nil {
						// Without margins all bits are alike: single flips first.
						own := p.idx.header(fp)
						for i, hd := range used[1:min(len(used), 1+tb)] {
							if bits.OnesCount32(hd^own) != 1 {
								t.Fatalf("budget=%d k=%d: lookup %d flips %d bits before all single flips were made", budget, k, i+1, bits.OnesCount32(hd^own))
							}
						}
					}
				}
			}
		}
	}
}

// flipSets is the number of nonempty sets of at most k of t bits.
func flipSets(t, k int) int {
	n, c := 0, 1
	for i := 1; i <= k; i++ {
		c = c * (t - i + 1) / i
		n += c
	}
	return n
}

// TestRankBitsAgainstSort: rankBits' first m ranks are those of a stable sort
// of the bits by margin, ties included, for every width PSM uses and more.
func TestRankBitsAgainstSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	table := fixLogits(flipLogits(DefaultPSMSigma))
	for n := 1; n <= 64; n++ {
		for range 50 {
			var margins [64]uint8
			spread := 1 + rng.IntN(256) // small spreads make ties
			for i := range margins {
				margins[i] = uint8(rng.IntN(spread))
			}
			m := 1 + rng.IntN(n)
			order := make([]uint8, n)
			for i := range order {
				order[i] = uint8(63 - i)
			}
			want := slices.Clone(order)
			sort.SliceStable(want, func(a, b int) bool { return margins[want[a]] < margins[want[b]] })
			logit := make([]int64, m)
			rankBits(order, logit, &margins, table)
			if !slices.Equal(order[:m], want[:m]) {
				t.Fatalf("n=%d m=%d: ranks %v, want %v (margins %v)", n, m, order[:m], want[:m], margins)
			}
			for r, b := range order[:m] {
				if logit[r] != table[margins[b]] {
					t.Fatalf("n=%d m=%d: rank %d logit %d, want %d", n, m, r, logit[r], table[margins[b]])
				}
			}
		}
	}
}

// unpackRanks lists the ranks of a VOSH node (rank i in byte i).
func unpackRanks(set uint64, size int) []uint8 {
	s := make([]uint8, size)
	for i := range s {
		s[i] = uint8(set >> (8 * i))
	}
	return s
}

// TestAddFromSearchPanics: a visit function that adds to the index gets a
// clear panic, not a search reading arrays a merge has unmapped.
func TestAddFromSearchPanics(t *testing.T) {
	t.Parallel()
	for _, ix := range []SimhashIndex{NewPSM(8, DefaultPSMSigma), NewBPHS(4, 1)} {
		for i := range 3000 {
			ix.Add(uint64(i)*0x9e3779b97f4a7c15, uint32(i))
		}
		func() {
			defer func() {
				if r := recover(); r != errAddInSearch {
					t.Errorf("%T: recovered %v, want %q", ix, r, errAddInSearch)
				}
			}()
			k := uint64(77)
			ix.Search(k*0x9e3779b97f4a7c15, nil, 3, func(uint32) bool {
				ix.Add(1, 1)
				return true
			})
		}()
		// The flag is cleared: adding after the search works.
		ix.Add(2, 2)
		if ix.Len() != 3001 {
			t.Errorf("%T: %d fingerprints, want 3001", ix, ix.Len())
		}
	}
}

// TestPSMVisitsEachMatchOnce: a small delta's head table has fewer bits than
// the header, so lookups that differ only in the header's high bits share a
// chain; each match must still be visited once, and all of them found.
func TestPSMVisitsEachMatchOnce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 52))
	p := newPSM(1<<12, DefaultPSMSigma, 0) // t = log2 n
	const n = 40000
	fps := make([]uint64, n)
	for i := range fps {
		fps[i] = rng.Uint64()
		if i > n-2000 && i%3 == 0 {
			// Neighbours in the delta, off by bits of the header's top.
			fps[i] = fps[i-1] ^ 1<<(63-rng.IntN(3))
		}
		p.Add(fps[i], uint32(i))
	}
	heads := bits.Len(uint(len(p.idx.dhead) - 1))
	if len(p.idx.delta) == 0 || heads >= int(p.idx.t) {
		t.Fatalf("delta %d entries, %d head bits, t = %d: the test needs a delta with fewer head bits than t",
			len(p.idx.delta), heads, p.idx.t)
	}
	inDelta := 0
	for q := n - 2000; q < n; q++ {
		var got []uint32
		p.Search(fps[q], nil, 3, func(s uint32) bool { got = append(got, s); return true })
		var want []uint32
		for s, v := range fps {
			if bits.OnesCount64(v^fps[q]) <= 3 {
				want = append(want, uint32(s))
			}
		}
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, want) {
			t.Fatalf("query %d: visited %v, want each of %v once", q, got, want)
		}
		if len(want) > 1 {
			inDelta++
		}
	}
	if inDelta < 100 {
		t.Fatalf("only %d queries with more than one match", inDelta)
	}
}
