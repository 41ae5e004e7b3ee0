// Package dedupeval measures dedup's settings against exact Jaccard similarity
// of looped shingle sets: it finds every pair of pages with J >= 0.5 exactly
// (prefix filtering over an inverted index, no sampling), then reports, per
// setting, the match probability per Jaccard and page-length bucket next to
// the theoretical curve, recall at J >= 0.95 and >= 0.90, and false matches
// among pairs with J < 0.80; for the online detector it also checks every
// dropped page against its named original.
package dedupeval

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// MinJaccard is the lowest similarity of the pairs Eval enumerates.
const MinJaccard = 0.5

// Pair is two pages (indexes into Report.URLs, A < B) with words and their exact Jaccard.
type Pair struct {
	A, B int
	J    float64
}

// Bucket counts the pairs of one Jaccard range and page-length range.
type Bucket struct {
	JLo, JHi float64 // J in [JLo, JHi); JHi > 1 for J = 1
	WordsLo  int     // shorter page of the pair has >= WordsLo words
	WordsHi  int     // and < WordsHi
	Pairs    int
	Matched  int
	Theory   float64 // P(k,s,r) at the bucket's mean J (supershingle settings), else NaN
	sumJ     float64
}

// Setting is the outcome of one method.
type Setting struct {
	Name           string
	RecallAt95     float64 // fraction of pairs with J >= 0.95 matched
	RecallAt90     float64 // fraction of pairs with J >= 0.90 matched
	FalseMatches   int     // matched pairs with J < 0.80 (among pairs with J >= 0.5)
	PairsBelow80   int
	Buckets        []Bucket
	Dropped        int     // online detector: pages dropped as duplicates
	FalseDrops     int     // dropped pages whose named original has J < 0.80
	Precision      float64 // 1 - FalseDrops/Dropped (online detector)
	DroppedExact   int
	DroppedByIndex map[string]int
	Settlements    int // online detector: exact settlements made (at most dedup.MaxSettle a page)
	SettledPages   int // online detector: pages with at least one settlement
}

// Report is the result of Eval.
type Report struct {
	URLs     []string
	Pairs    []Pair // every pair with J >= MinJaccard
	Settings []Setting
}

var (
	jEdges    = []float64{0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1, 1.01}
	wordEdges = []int{0, 20, 80, 300, 1000, math.MaxInt}
)

// Eval compares the settings AltaVista, Bing, simhash-BPHS, simhash-PSM and the
// combined online detector with verification, all built from opts, on pages
// (url -> normalized tokens). Pages are fed to the online detector in URL order.
func Eval(pages map[string][]string, opts dedup.Options) Report {
	urls := slices.Sorted(func(yield func(string) bool) {
		for u := range pages {
			if !yield(u) {
				return
			}
		}
	})
	opts = opts.WithDefaults()
	base, err := dedup.New(opts)
	if err != nil {
		return Report{URLs: urls, Settings: []Setting{{Name: "invalid options: " + err.Error()}}}
	}
	sets := make([][]uint64, len(urls))
	words := make([]int, len(urls))
	for i, u := range urls {
		s := base.Shingles(pages[u], nil)
		slices.Sort(s)
		sets[i] = slices.Compact(s)
		words[i] = len(pages[u])
	}
	rep := Report{URLs: urls, Pairs: SimilarPairs(sets, MinJaccard)}

	av, bing := opts, opts
	av.Filter = dedup.FilterOptions{Preset: dedup.PresetAltaVista}
	bing.Filter = dedup.FilterOptions{Preset: dedup.PresetBing}
	for _, o := range []dedup.Options{av, bing} {
		d, err := dedup.New(o)
		if err != nil {
			continue
		}
		f := o.Filter.Resolved()
		sigs := signAll(d, urls, pages)
		match := func(a, b int) bool {
			if words[a] == 0 || words[b] == 0 {
				return false
			}
			agree := 0
			for i := range sigs[a].Super {
				if sigs[a].Super[i] == sigs[b].Super[i] {
					agree++
				}
			}
			return agree >= f.R
		}
		theory := func(j float64) float64 { return dedup.FilterProbability(f.K, f.S, f.R, j) }
		rep.Settings = append(rep.Settings, score(o.Filter.Preset, rep.Pairs, words, match, theory))
	}

	sigs := signAll(base, urls, pages)
	for _, ix := range []struct {
		name string
		idx  dedup.SimhashIndex
	}{
		{"simhash-bphs", dedup.NewBPHS(opts.BPHSBlocks, opts.BPHSHeader)},
		{"simhash-psm", dedup.NewPSM(opts.PSMBudget, opts.PSMSigma)},
	} {
		for i, s := range sigs {
			if s.Words > 0 {
				ix.idx.Add(s.Simhash, uint32(i))
			}
		}
		found := make([][]uint32, len(sigs))
		for i, s := range sigs {
			if s.Words == 0 {
				continue
			}
			ix.idx.Search(s.Simhash, &s.Margins, opts.SimhashK, func(slot uint32) bool {
				found[i] = append(found[i], slot)
				return true
			})
		}
		match := func(a, b int) bool {
			return slices.Contains(found[a], uint32(b)) || slices.Contains(found[b], uint32(a))
		}
		rep.Settings = append(rep.Settings, score(ix.name, rep.Pairs, words, match, nil))
	}
	rep.Settings = append(rep.Settings, online(opts, urls, sigs, sets, rep.Pairs, words))
	return rep
}

func signAll(d *dedup.Detector, urls []string, pages map[string][]string) []*dedup.Signature {
	sigs := make([]*dedup.Signature, len(urls))
	for i, u := range urls {
		sigs[i] = d.Sign(pages[u])
	}
	return sigs
}

// online feeds every page to a Detector in order, settling candidates on the
// exact Jaccard of the shingle sets as the crawl does (CheckAndAddSettled); a
// pair is matched when both pages end up represented by the same kept page.
func online(opts dedup.Options, urls []string, sigs []*dedup.Signature, sets [][]uint64, pairs []Pair, words []int) Setting {
	d, err := dedup.New(opts)
	if err != nil {
		return Setting{Name: "combined: " + err.Error()}
	}
	rep := make([]int, len(urls)) // the kept page that represents each page
	st := Setting{Name: "combined+verify", DroppedByIndex: map[string]int{}}
	for i, s := range sigs {
		rep[i] = i
		calls := 0
		dec := d.CheckAndAddSettled(uint64(i+1), s, func(orig uint64) (float64, bool) {
			calls++
			return Jaccard(sets[i], sets[orig-1]), true
		})
		st.Settlements += calls
		if calls > 0 {
			st.SettledPages++
		}
		if dec.Class == dedup.Unique {
			continue
		}
		rep[i] = int(dec.Original - 1)
		st.Dropped++
		st.DroppedByIndex[dec.Method]++
		if dec.Class == dedup.Exact {
			st.DroppedExact++
		}
		if Jaccard(sets[i], sets[dec.Original-1]) < 0.8 {
			st.FalseDrops++
		}
	}
	match := func(a, b int) bool { return rep[a] == rep[b] }
	sc := score(st.Name, pairs, words, match, nil)
	sc.Dropped, sc.FalseDrops, sc.DroppedExact, sc.DroppedByIndex = st.Dropped, st.FalseDrops, st.DroppedExact, st.DroppedByIndex
	sc.Settlements, sc.SettledPages = st.Settlements, st.SettledPages
	sc.Precision = 1
	if st.Dropped > 0 {
		sc.Precision = 1 - float64(st.FalseDrops)/float64(st.Dropped)
	}
	return sc
}

func score(name string, pairs []Pair, words []int, match func(a, b int) bool, theory func(float64) float64) Setting {
	st := Setting{Name: name}
	var n95, m95, n90, m90 int
	idx := map[[2]int]int{}
	for _, p := range pairs {
		m := match(p.A, p.B)
		if p.J >= 0.95 {
			n95++
			if m {
				m95++
			}
		}
		if p.J >= 0.90 {
			n90++
			if m {
				m90++
			}
		}
		if p.J < 0.8 {
			st.PairsBelow80++
			if m {
				st.FalseMatches++
			}
		}
		jb := bucketOf(jEdges, p.J)
		wb := bucketOfInt(wordEdges, min(words[p.A], words[p.B]))
		key := [2]int{wb, jb}
		bi, ok := idx[key]
		if !ok {
			bi = len(st.Buckets)
			idx[key] = bi
			st.Buckets = append(st.Buckets, Bucket{JLo: jEdges[jb], JHi: jEdges[jb+1], WordsLo: wordEdges[wb], WordsHi: wordEdges[wb+1]})
		}
		b := &st.Buckets[bi]
		b.Pairs++
		b.sumJ += p.J
		if m {
			b.Matched++
		}
	}
	for i := range st.Buckets {
		b := &st.Buckets[i]
		b.Theory = math.NaN()
		if theory != nil {
			b.Theory = theory(b.sumJ / float64(b.Pairs))
		}
	}
	slices.SortFunc(st.Buckets, func(x, y Bucket) int {
		return cmp.Or(cmp.Compare(x.WordsLo, y.WordsLo), cmp.Compare(x.JLo, y.JLo))
	})
	st.RecallAt95, st.RecallAt90 = ratio(m95, n95), ratio(m90, n90)
	return st
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// bucketOf returns the bucket i with edges[i] <= v < edges[i+1].
func bucketOf(edges []float64, v float64) int {
	for i := len(edges) - 2; i >= 0; i-- {
		if v >= edges[i] {
			return i
		}
	}
	return 0
}

func bucketOfInt(edges []int, v int) int {
	for i := len(edges) - 2; i >= 0; i-- {
		if v >= edges[i] {
			return i
		}
	}
	return 0
}

// Jaccard is the exact Jaccard similarity of two sorted, distinct sets (1 for two empty sets).
func Jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := intersect(a, b)
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func intersect(a, b []uint64) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// SimilarPairs returns every pair of sets (sorted, distinct) with Jaccard >= t,
// exactly, by prefix filtering (Chaudhuri et al.; Bayardo et al., All-Pairs):
// with elements ordered by increasing document frequency, two sets with
// J >= t share an element among the first |x| - ceil(t|x|) + 1 of each, and
// |y| >= t|x|. Candidates from an inverted index over prefixes are verified by
// merging. Empty sets (pages without words, never duplicates) pair with nothing.
func SimilarPairs(sets [][]uint64, t float64) []Pair {
	df := map[uint64]int32{}
	for _, s := range sets {
		for _, v := range s {
			df[v]++
		}
	}
	type elem struct {
		df int32
		v  uint64
	}
	ordered := make([][]elem, len(sets))
	for i, s := range sets {
		o := make([]elem, len(s))
		for k, v := range s {
			o[k] = elem{df[v], v}
		}
		slices.SortFunc(o, func(x, y elem) int { return cmp.Or(cmp.Compare(x.df, y.df), cmp.Compare(x.v, y.v)) })
		ordered[i] = o
	}
	prefix := func(n int) int { return n - int(math.Ceil(t*float64(n)-1e-9)) + 1 }
	index := map[uint64][]int32{}
	var pairs []Pair
	seen := map[int32]bool{}
	// Process sets by increasing size, so every earlier set is no larger.
	order := make([]int, len(sets))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(len(sets[x]), len(sets[y])) })
	for _, x := range order {
		if len(sets[x]) == 0 {
			continue
		}
		clear(seen)
		p := prefix(len(sets[x]))
		for _, e := range ordered[x][:p] {
			for _, y := range index[e.v] {
				if seen[y] || float64(len(sets[y])) < t*float64(len(sets[x]))-1e-9 {
					continue
				}
				seen[y] = true
				if j := Jaccard(sets[x], sets[y]); j >= t {
					pairs = append(pairs, Pair{A: min(int(y), x), B: max(int(y), x), J: j})
				}
			}
			index[e.v] = append(index[e.v], int32(x))
		}
	}
	slices.SortFunc(pairs, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) })
	return pairs
}

// String renders the report as text tables.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pages, %d pairs with J >= %.2f\n", len(r.URLs), len(r.Pairs), MinJaccard)
	for _, s := range r.Settings {
		fmt.Fprintf(&b, "\n== %s: recall J>=0.95 %.4f, J>=0.90 %.4f, false matches among J<0.80 %d of %d",
			s.Name, s.RecallAt95, s.RecallAt90, s.FalseMatches, s.PairsBelow80)
		if s.Dropped > 0 {
			fmt.Fprintf(&b, "; dropped %d (exact %d, by %v), false drops %d, precision %.4f; %d settlements on %d pages",
				s.Dropped, s.DroppedExact, s.DroppedByIndex, s.FalseDrops, s.Precision, s.Settlements, s.SettledPages)
		}
		fmt.Fprintf(&b, "\n%-12s %-12s %8s %8s %8s %8s\n", "words", "J", "pairs", "matched", "P", "theory")
		for _, bk := range s.Buckets {
			hi := fmt.Sprint(bk.WordsHi)
			if bk.WordsHi == math.MaxInt {
				hi = "inf"
			}
			fmt.Fprintf(&b, "%-12s [%.2f,%.2f) %8d %8d %8.4f %8.4f\n", fmt.Sprintf("[%d,%s)", bk.WordsLo, hi),
				bk.JLo, min(bk.JHi, 1), bk.Pairs, bk.Matched, float64(bk.Matched)/float64(bk.Pairs), bk.Theory)
		}
	}
	return b.String()
}
