package mirror

import (
	"math/rand/v2"
	"testing"
)

// TestResemblanceDiscountsSystematicDifferences: a difference that every
// compared pair of a candidate shows (a banner) stops counting from the pair
// after SystematicPairs, while a page's own edit always counts; another
// candidate learns nothing from this one.
func TestResemblanceDiscountsSystematicDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	page := func(n int) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = rng.Uint64()
		}
		return s
	}
	banner := page(40)
	withBanner := func(p []uint64) []uint64 { return append(append([]uint64(nil), p...), banner...) }
	d := NewDetector(DefaultOptions())
	const key = "a <> b"
	for i := 0; i < 6; i++ {
		orig := page(100) // short pages: the banner alone puts them at J = 100/140
		j := d.Resemblance(key, orig, withBanner(orig))
		want := 100.0 / 140
		if i >= SystematicPairs {
			want = 1
		}
		if j != want {
			t.Errorf("pair %d: J = %.4f, want %.4f", i+1, j, want)
		}
	}
	// A page-specific edit still counts, beside the discounted banner.
	orig := page(100)
	edited := withBanner(orig[:90])
	edited = append(edited, page(10)...)
	if j, want := d.Resemblance(key, orig, edited), 90.0/110; j != want {
		t.Errorf("edited page: J = %.4f, want %.4f (the edit counts, the banner does not)", j, want)
	}
	// Another candidate starts from nothing.
	orig = page(100)
	if j, want := d.Resemblance("c <> d", orig, withBanner(orig)), 100.0/140; j != want {
		t.Errorf("other candidate: J = %.4f, want %.4f", j, want)
	}
	// Repeats count once, in any order.
	if j := d.Resemblance("e <> f", []uint64{3, 1, 2, 2}, []uint64{2, 3, 1}); j != 1 {
		t.Errorf("repeats: J = %v, want 1", j)
	}
}

// TestResemblanceBounded: past systematicCands candidates nothing more is
// kept (plain Jaccard), and a candidate keeps at most systematicMax shingles.
func TestResemblanceBounded(t *testing.T) {
	d := NewDetector(DefaultOptions())
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < systematicCands+10; i++ {
		a := []uint64{rng.Uint64(), rng.Uint64()}
		d.Resemblance(string(rune('A'+i%26))+string(rune(i)), a, []uint64{a[0]})
	}
	if len(d.diffs) > systematicCands {
		t.Errorf("%d candidates tracked, want at most %d", len(d.diffs), systematicCands)
	}
	d = NewDetector(DefaultOptions())
	for i := 0; i < 10; i++ {
		a := make([]uint64, 2000)
		for j := range a {
			a[j] = rng.Uint64()
		}
		d.Resemblance("k", a, nil)
	}
	if dc := d.diffs["k"]; dc == nil || len(dc.counts) != systematicMax {
		t.Errorf("shingles tracked for a candidate: %v, want exactly the cap %d", dc, systematicMax)
	}
}
