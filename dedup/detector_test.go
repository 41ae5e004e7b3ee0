package dedup

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func edit(tokens []string, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := slices.Clone(tokens)
	for range n {
		out[rng.IntN(len(out))] = fmt.Sprintf("edit%d", rng.IntN(1<<30))
	}
	return out
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	long := benchTokens(2000, 1)
	other := benchTokens(2000, 2)
	short := benchTokens(40, 3)
	for _, tc := range []struct {
		name   string
		mod    func(*Options)
		page   []string
		class  Class
		orig   uint64
		method string
	}{
		{"identical", nil, slices.Clone(long), Exact, 1, MethodExact},
		{"one word changed", nil, edit(long, 1, 1), Near, 1, MethodSupershingle},
		{"three words changed", nil, edit(long, 3, 2), Near, 1, MethodSupershingle},
		{"far: 10% changed", nil, edit(long, 200, 3), Unique, 0, ""},
		{"unrelated", nil, benchTokens(2000, 4), Unique, 0, ""},
		{"short page identical", nil, slices.Clone(short), Exact, 3, MethodExact},
		{"short page one word changed (J ~ 0.8)", nil, edit(short, 1, 4), Unique, 0, ""},
		{"empty", nil, nil, Unique, 0, ""},
		{"bing one word changed", func(o *Options) { o.Filter.Preset = PresetBing }, edit(long, 1, 5), Near, 1, MethodSupershingle},
		{"bphs one word changed", func(o *Options) { o.SimhashIndex = IndexBPHS }, edit(long, 1, 6), Near, 1, MethodSupershingle},
		// A filter that needs all 84 samples equal misses J ~ 0.99; simhash finds it.
		{"simhash finds what the filter misses", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 1, S: 84, R: 1, Bits: 64}
			o.Bands = -1
		}, edit(long, 1, 3), Near, 1, MethodSimhash},
		{"simhash via bphs", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 1, S: 84, R: 1, Bits: 64}
			o.SimhashIndex = IndexBPHS
			o.Bands = -1
		}, edit(long, 1, 3), Near, 1, MethodSimhash},
		{"no simhash, filter misses", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 1, S: 84, R: 1, Bits: 64}
			o.Simhash = false
			o.Bands = -1
		}, edit(long, 1, 3), Unique, 0, ""},
		// The band stage finds it without simhash.
		{"bands find what the filter misses", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 1, S: 84, R: 1, Bits: 64}
			o.Simhash = false
		}, edit(long, 1, 3), Near, 1, MethodSupershingle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDetector(t, tc.mod)
			for id, p := range [][]string{long, other, short} {
				if dec := d.CheckAndAdd(uint64(id+1), d.Sign(p)); dec.Class != Unique {
					t.Fatalf("seed page %d: %+v", id+1, dec)
				}
			}
			dec := d.CheckAndAdd(99, d.Sign(tc.page))
			if dec.Class != tc.class || dec.Original != tc.orig || dec.Method != tc.method {
				t.Fatalf("decision %+v, want class %v original %d method %q", dec, tc.class, tc.orig, tc.method)
			}
			switch tc.class {
			case Exact:
				if dec.Similarity != 1 {
					t.Errorf("exact similarity %g", dec.Similarity)
				}
			case Near:
				if dec.Similarity < 0.95 || dec.Similarity >= 1.0000001 {
					t.Errorf("near similarity %g", dec.Similarity)
				}
			}
			wantLen := 3
			if tc.class == Unique && len(tc.page) > 0 {
				wantLen = 4
			}
			if d.Len() != wantLen {
				t.Errorf("Len %d, want %d (duplicates and empty pages are not indexed)", d.Len(), wantLen)
			}
		})
	}
}

func TestClassString(t *testing.T) {
	t.Parallel()
	for c, want := range map[Class]string{Unique: "unique", Exact: "exact_duplicate", Near: "near_duplicate", 9: "class(9)"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", c, c.String(), want)
		}
	}
}

func TestRepresentativeStaysFirst(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	a := benchTokens(1500, 10)
	d.CheckAndAdd(1, d.Sign(a))
	b := edit(a, 1, 11)
	if dec := d.CheckAndAdd(2, d.Sign(b)); dec.Original != 1 {
		t.Fatalf("b: %+v", dec)
	}
	// c duplicates b exactly, but b was not indexed: c points at a, as near.
	if dec := d.CheckAndAdd(3, d.Sign(b)); dec.Class != Near || dec.Original != 1 {
		t.Fatalf("c: %+v, want near of 1", dec)
	}
}

// TestTiesNameTheSmallestID: two indexed pages equally similar to a new one
// (here identical) name the same original whatever order they were indexed
// in, so an index rebuilt after a restart (in id order) decides as the one
// the crawl built (in fetch order) did, for near and exact duplicates.
func TestTiesNameTheSmallestID(t *testing.T) {
	t.Parallel()
	a := benchTokens(900, 31)
	for _, order := range [][]uint64{{7, 3}, {3, 7}} {
		d := newTestDetector(t, nil)
		for _, id := range order {
			d.Add(id, d.Sign(a))
		}
		if dec := d.CheckAndAdd(20, d.Sign(edit(a, 1, 32))); dec.Class != Near || dec.Original != 3 {
			t.Errorf("indexed in order %v: near duplicate %+v, want original 3", order, dec)
		}
		if dec := d.CheckAndAdd(21, d.Sign(a)); dec.Class != Exact || dec.Original != 3 {
			t.Errorf("indexed in order %v: exact duplicate %+v, want original 3", order, dec)
		}
	}
}

func TestAddRebuildsIndex(t *testing.T) {
	t.Parallel()
	d1 := newTestDetector(t, nil)
	var stored [][]byte
	for i := range 50 {
		sig := d1.Sign(benchTokens(300+i, uint64(100+i)))
		if d1.CheckAndAdd(uint64(i+1), sig).Class != Unique {
			t.Fatal("seed pages should be unique")
		}
		b, err := sig.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, b)
	}
	// "Restart": a new detector rebuilt from stored signatures.
	d2 := newTestDetector(t, nil)
	for i, b := range stored {
		var sig Signature
		if err := sig.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		d2.Add(uint64(i+1), &sig)
	}
	if d2.Len() != 50 {
		t.Fatalf("Len %d", d2.Len())
	}
	if dec := d2.CheckAndAdd(100, d2.Sign(edit(benchTokens(320, 120), 1, 3))); dec.Class != Near || dec.Original != 21 {
		t.Errorf("after rebuild: %+v, want near of 21", dec)
	}
	if dec := d2.CheckAndAdd(101, d2.Sign(benchTokens(310, 110))); dec.Class != Exact || dec.Original != 11 {
		t.Errorf("after rebuild: %+v, want exact of 11", dec)
	}
}

func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		d := newTestDetector(t, func(o *Options) { o.Filter.Preset = preset })
		for _, toks := range [][]string{nil, benchTokens(1, 1), benchTokens(700, 2)} {
			sig := d.Sign(toks)
			b, err := sig.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Signature
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("%s: %v", preset, err)
			}
			if got.Exact != sig.Exact || got.Words != sig.Words || got.Simhash != sig.Simhash ||
				!slices.Equal(got.Sketch, sig.Sketch) || !slices.Equal(got.Super, sig.Super) || got.Margins != sig.Margins {
				t.Errorf("%s: round trip changed the signature", preset)
			}
			if preset == PresetBing && len(toks) > 0 && len(b) > 2+3+16+1+84*8+1+12+64 {
				t.Errorf("bing signature takes %d bytes: supershingles not packed", len(b))
			}
		}
	}
	good, _ := newTestDetector(t, nil).Sign(benchTokens(50, 1)).MarshalBinary()
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
		"short":     good[:20],
	} {
		var s Signature
		if err := s.UnmarshalBinary(bad); !errors.Is(err, ErrSignatureFormat) {
			t.Errorf("%s: error %v, want ErrSignatureFormat", name, err)
		}
	}
}

// TestCheckAndAddConcurrent: of concurrent calls with the same page exactly one
// is Unique; run with -race.
func TestCheckAndAddConcurrent(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	pages := make([][]string, 20)
	for i := range pages {
		pages[i] = benchTokens(2000, uint64(1000+i))
	}
	const workers = 8
	var wg sync.WaitGroup
	uniques := make([][]uint64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, p := range pages {
				// Alternate identical and near-identical (J >= 0.99) copies.
				if w%2 == 1 {
					p = edit(p, 1, uint64(w))
				}
				id := uint64(w*1000 + i + 1)
				if dec := d.CheckAndAdd(id, d.Sign(p)); dec.Class == Unique {
					uniques[w] = append(uniques[w], uint64(i))
				}
			}
		}()
	}
	wg.Wait()
	count := make([]int, len(pages))
	for _, u := range uniques {
		for _, i := range u {
			count[i]++
		}
	}
	for i, c := range count {
		if c != 1 {
			t.Errorf("page %d: %d unique decisions among %d concurrent copies, want 1", i, c, workers)
		}
	}
	if d.Len() != len(pages) {
		t.Errorf("Len %d, want %d", d.Len(), len(pages))
	}
}

func TestManyPagesAcrossMerges(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	const n = 3000
	for i := range n {
		toks := benchTokens(60, uint64(5000+i))
		if dec := d.CheckAndAdd(uint64(i+1), d.Sign(toks)); dec.Class != Unique {
			t.Fatalf("page %d: %+v", i, dec)
		}
	}
	for _, i := range []int{0, 1, 1500, 2999} {
		if dec := d.CheckAndAdd(99999, d.Sign(benchTokens(60, uint64(5000+i)))); dec.Class != Exact || dec.Original != uint64(i+1) {
			t.Errorf("page %d again: %+v", i, dec)
		}
	}
	st := d.Stats()
	if st.Pages != n || st.SupershingleBytes <= 0 || st.SimhashBytes <= 0 {
		t.Errorf("stats %+v", st)
	}
}
