package dedup

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func newTestDetector(tb testing.TB, mod func(*Options)) *Detector {
	tb.Helper()
	return newTestDetectorWith(tb, hostKernels, mod)
}

// newTestDetectorWith is newTestDetector with the kernel set k.
func newTestDetectorWith(tb testing.TB, k *kernels, mod func(*Options)) *Detector {
	tb.Helper()
	o := DefaultOptions()
	if mod != nil {
		mod(&o)
	}
	d, err := newDetector(o, k)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestLoopedShinglesRose(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, func(o *Options) { o.ShingleWords = 4 })
	tokens := strings.Fields("a rose is a rose is a rose")
	got := d.Shingles(tokens, nil)
	if len(got) != 8 {
		t.Fatalf("%d shingles, want one per word (8)", len(got))
	}
	// The distinct looped 4-word shingles, computed directly: Rabin (PolyShingle)
	// over the four token fingerprints, each Rabin (PolyText) of "token ".
	text, sh := NewRabin(PolyText), NewRabin(PolyShingle)
	fp := func(shingle string) uint64 {
		f := sh.Empty()
		for _, w := range strings.Fields(shingle) {
			f = sh.ExtendWord(f, text.ExtendString(0, w+" "))
		}
		return f
	}
	wantSet := []string{"a rose is a", "rose is a rose", "is a rose is", "is a rose a", "a rose a rose", "rose a rose is"}
	var want []uint64
	for _, s := range wantSet {
		want = append(want, fp(s))
	}
	slices.Sort(want)
	gotSet := slices.Compact(slices.Sorted(slices.Values(got)))
	if !slices.Equal(gotSet, want) {
		t.Errorf("distinct shingles = %x, want %x (%q)", gotSet, want, wantSet)
	}
	// In order, the shingle starting at each word.
	order := []string{"a rose is a", "rose is a rose", "is a rose is", "a rose is a", "rose is a rose", "is a rose a", "a rose a rose", "rose a rose is"}
	for i, s := range order {
		if got[i] != fp(s) {
			t.Errorf("shingle %d = %#x, want %q = %#x", i, got[i], s, fp(s))
		}
	}
}

func TestShinglesSlideEqualsDirect(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	text, sh := NewRabin(PolyText), NewRabin(PolyShingle)
	for _, w := range []int{1, 2, 3, 5, 8} {
		d := newTestDetector(t, func(o *Options) { o.ShingleWords = w })
		for _, n := range []int{1, 2, 4, 5, 7, 8, 9, 16, 17, 30, 64, 101} {
			tokens := make([]string, n)
			for i := range tokens {
				tokens[i] = fmt.Sprintf("w%d%s", rng.IntN(10), strings.Repeat("x", rng.IntN(12)))
			}
			got := d.Shingles(tokens, nil)
			for i := range n {
				f := sh.Empty()
				for j := range w {
					f = sh.ExtendWord(f, text.ExtendString(0, tokens[(i+j)%n]+" "))
				}
				if got[i] != f {
					t.Fatalf("w=%d n=%d shingle %d: slide %#x, direct %#x", w, n, i, got[i], f)
				}
			}
		}
	}
}

func TestExactIsFingerprintOfStream(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	text := NewRabin(PolyText)
	long := strings.Repeat("the quick brown fox jumps over the lazy dog, internationalization écrits 日本語のテキスト ", 9)
	for _, s := range []string{"a", "a rose is a rose is a rose", "extraordinarily long-tokenized wordings here x", long} {
		tokens := strings.Fields(s)
		sig := d.Sign(tokens)
		if want := text.HashString(strings.Join(tokens, " ") + " "); sig.Exact != want {
			t.Errorf("%q: Exact %#x, want Rabin of the stream %#x", s, sig.Exact, want)
		}
		if sig.Words != len(tokens) {
			t.Errorf("%q: Words %d, want %d", s, sig.Words, len(tokens))
		}
	}
	empty := d.Sign(nil)
	if empty.Words != 0 || empty.Exact != text.Empty() || len(empty.Sketch) != 84 || len(empty.Super) != 6 {
		t.Errorf("empty page signature = %+v", empty)
	}
}

// sets returns two feature sets (mixed values) with |A∩B| = c, |A\B| = |B\A| = e.
func sets(rng *rand.Rand, c, e int) (a, b []uint64) {
	for range c {
		v := mix64(rng.Uint64())
		a, b = append(a, v), append(b, v)
	}
	for range e {
		a = append(a, mix64(rng.Uint64()))
		b = append(b, mix64(rng.Uint64()))
	}
	rng.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return a, b
}

// TestMinhashBinomial checks that sketch agreement behaves like 84 independent
// min-wise samples: the mean estimate is within binomial error of J, its
// variance is J(1-J)/84, and a block of 14 samples agrees with probability J^14.
func TestMinhashBinomial(t *testing.T) {
	t.Parallel()
	sg := newSigner(DefaultOptions(), hostKernels)
	rng := rand.New(rand.NewPCG(9, 10))
	const trials = 400
	for _, tc := range []struct{ c, e int }{
		{19, 1}, {38, 1}, {76, 2}, {180, 10}, {950, 25}, {1800, 100}, {600, 200}, {300, 300},
	} {
		j := float64(tc.c) / float64(tc.c+2*tc.e)
		var sum, sumsq float64
		blocks, blockHits := 0, 0
		sa, sb := make([]uint64, 84), make([]uint64, 84)
		for range trials {
			a, b := sets(rng, tc.c, tc.e)
			sg.minhash(a, sa)
			sg.minhash(b, sb)
			est := float64(equalSamples(sa, sb)) / 84
			sum += est
			sumsq += est * est
			for k := range 6 {
				blocks++
				if slices.Equal(sa[14*k:14*k+14], sb[14*k:14*k+14]) {
					blockHits++
				}
			}
		}
		mean := sum / trials
		variance := sumsq/trials - mean*mean
		wantVar := j * (1 - j) / 84
		se := math.Sqrt(wantVar / trials)
		if math.Abs(mean-j) > 4*se+1e-9 {
			t.Errorf("J=%.3f (|A|=%d): mean estimate %.4f, more than 4 standard errors (%.4f) away", j, tc.c+tc.e, mean, se)
		}
		if variance < 0.6*wantVar || variance > 1.5*wantVar {
			t.Errorf("J=%.3f (|A|=%d): variance %.5f, binomial %.5f: samples not independent", j, tc.c+tc.e, variance, wantVar)
		}
		p14 := math.Pow(j, 14)
		got := float64(blockHits) / float64(blocks)
		if math.Abs(got-p14) > 4*math.Sqrt(p14*(1-p14)/float64(blocks))+0.01 {
			t.Errorf("J=%.3f (|A|=%d): 14-sample blocks agree %.4f, want J^14 = %.4f", j, tc.c+tc.e, got, p14)
		}
	}
}

func TestMinhashIdenticalAndDisjoint(t *testing.T) {
	t.Parallel()
	sg := newSigner(DefaultOptions(), hostKernels)
	rng := rand.New(rand.NewPCG(11, 12))
	a, b := sets(rng, 0, 500)
	sa, sb := make([]uint64, 84), make([]uint64, 84)
	sg.minhash(a, sa)
	sg.minhash(b, sb)
	if n := equalSamples(sa, sb); n != 0 {
		t.Errorf("disjoint sets share %d samples", n)
	}
	rev := slices.Clone(a)
	slices.Reverse(rev)
	sg.minhash(rev, sb)
	if !slices.Equal(sa, sb) {
		t.Error("sketch depends on feature order")
	}
	for i, v := range sa {
		if !slices.Contains(a, v) {
			t.Fatalf("sample %d = %#x is not a feature of the set", i, v)
		}
	}
}

func TestSketchOfTokenStreams(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	rng := rand.New(rand.NewPCG(13, 14))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("tok%d", i)
	}
	base := make([]string, 1000)
	for i := range base {
		base[i] = vocab[rng.IntN(len(vocab))]
	}
	for _, edits := range []int{0, 1, 3, 10, 40} {
		mod := slices.Clone(base)
		for range edits {
			mod[rng.IntN(len(mod))] = vocab[rng.IntN(len(vocab))]
		}
		j := exactJaccard(d.Shingles(base, nil), d.Shingles(mod, nil))
		est := Similarity(d.Sign(base), d.Sign(mod))
		se := math.Sqrt(j * (1 - j) / 84)
		if math.Abs(est-j) > 4.5*se+1e-9 {
			t.Errorf("%d edits: estimate %.3f, exact J %.3f (4.5 se = %.3f)", edits, est, j, 4.5*se)
		}
	}
}

func exactJaccard(a, b []uint64) float64 {
	sa := slices.Compact(slices.Sorted(slices.Values(a)))
	sb := slices.Compact(slices.Sorted(slices.Values(b)))
	inter := 0
	i, k := 0, 0
	for i < len(sa) && k < len(sb) {
		switch {
		case sa[i] == sb[k]:
			inter++
			i++
			k++
		case sa[i] < sb[k]:
			i++
		default:
			k++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

func TestSimhashMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 2, 254, 255, 256, 1000} {
		xs := make([]uint64, n)
		for i := range xs {
			xs[i] = rng.Uint64()
		}
		var m [64]uint8
		got := simhash(xs, &m)
		var want uint64
		for j := range 64 {
			w := 0
			for _, x := range xs {
				if x>>j&1 == 1 {
					w++
				} else {
					w--
				}
			}
			if w >= 0 {
				want |= 1 << j
			}
			if wm := uint8(min(255, math.Round(math.Abs(float64(w))*32/math.Sqrt(float64(n))))); m[j] != wm {
				t.Fatalf("n=%d bit %d: margin %d, want %d", n, j, m[j], wm)
			}
		}
		if got != want {
			t.Fatalf("n=%d: simhash %#x, want %#x", n, got, want)
		}
	}
}

func TestSimhashNearDuplicatesAreClose(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 18))
	a, b := sets(rng, 1980, 10) // J ~ 0.99
	var m [64]uint8
	ha, hb := simhash(a, &m), simhash(b, &m)
	if d := bits.OnesCount64(ha ^ hb); d > 6 {
		t.Errorf("J=0.99 pages differ in %d simhash bits", d)
	}
	c, e := sets(rng, 0, 2000)
	if d := bits.OnesCount64(simhash(c, &m) ^ simhash(e, &m)); d < 16 {
		t.Errorf("unrelated pages differ in only %d bits", d)
	}
}

func TestSupershingleBits(t *testing.T) {
	t.Parallel()
	toks := strings.Fields(strings.Repeat("lorem ipsum dolor sit amet consectetur adipiscing elit ", 20))
	for _, tc := range []struct {
		preset string
		k      int
		max    uint64
	}{{PresetAltaVista, 6, math.MaxUint64}, {PresetBing, 6, 0xffff}} {
		d := newTestDetector(t, func(o *Options) { o.Filter.Preset = tc.preset })
		sig := d.Sign(toks)
		if len(sig.Super) != tc.k {
			t.Fatalf("%s: %d supershingles", tc.preset, len(sig.Super))
		}
		wide := false
		for _, v := range sig.Super {
			if v > tc.max {
				t.Errorf("%s: supershingle %#x exceeds %#x", tc.preset, v, tc.max)
			}
			wide = wide || v > 0xffffffff
		}
		if tc.preset == PresetAltaVista && !wide {
			t.Errorf("altavista supershingles look truncated: %x", sig.Super)
		}
	}
}

func TestSignAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers under the race detector")
	}
	d := newTestDetector(t, nil)
	toks := benchTokens(2000, 1)
	d.Sign(toks)
	// The signature itself: struct, sketch and supershingle slices.
	if n := testing.AllocsPerRun(20, func() { d.Sign(toks) }); n > 3 {
		t.Errorf("Sign allocates %.0f times per page, want <= 3", n)
	}
}

// TestMinhashMatchesReference pins the fast min-hash (SWAR prefixes, the
// byte-threshold filter, lazy tail hashes) to its definition: sample i is the
// feature with the smallest (8-bit prefix, 64-bit tail hash) pair of order i.
func TestMinhashMatchesReference(t *testing.T) {
	t.Parallel()
	sg := newSigner(DefaultOptions(), hostKernels)
	rng := rand.New(rand.NewPCG(3, 3))
	ref := func(xs []uint64, i int) uint64 {
		k, lane := i/8, uint(i%8)
		best, bp, bt := uint64(0), uint64(256), uint64(0)
		for _, x := range xs {
			p := (x ^ sg.prefSeed[k]) * sg.prefMul[k]
			p = ((p ^ p>>32) >> (8 * lane)) & 0xff
			tl := mix64(x ^ sg.tailSeed[i])
			if p < bp || (p == bp && tl < bt) {
				best, bp, bt = x, p, tl
			}
		}
		return best
	}
	for _, n := range []int{1, 5, 20, 84, 300, 2000} {
		for rep := range 6 {
			xs := make([]uint64, n)
			for i := range xs {
				xs[i] = rng.Uint64()
				if rep%2 == 1 { // low-entropy features: many prefix ties
					xs[i] &= 0xffff00000000ffff
				}
			}
			got := make([]uint64, 84)
			sg.minhash(xs, got)
			for i := range got {
				if want := ref(xs, i); got[i] != want {
					t.Fatalf("n=%d rep=%d: sample %d = %#x, want %#x", n, rep, i, got[i], want)
				}
			}
		}
	}
}

func TestLoadShort(t *testing.T) {
	t.Parallel()
	for n := 0; n < 8; n++ {
		s := "abcdefgh"[:n]
		var want uint64
		for i := 0; i < n; i++ {
			want |= uint64(s[i]) << (8 * i)
		}
		if got := loadShort(s); got != want {
			t.Errorf("loadShort(%q) = %#x, want %#x", s, got, want)
		}
	}
}
