package dedup

import (
	"math"
	"testing"
)

func TestFilterProbabilitySeedValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		k, s, r int
		j       float64
		lo, hi  float64
	}{
		// Broder (seed 002): 6 features of 14 samples, 2 needed.
		{"miss at 0.975 about 1%", 6, 14, 2, 0.975, 0.989, 1},
		{"miss above 0.99 under 0.00022", 6, 14, 2, 0.99, 1 - 0.00022, 1},
		{"match below 0.77 under 1%", 6, 14, 2, 0.77, 0, 0.01},
		{"match below 0.5 under 0.6e-7", 6, 14, 2, 0.5, 0, 0.6e-7},
		// Manasse (seed 000, 6.1): 1-(1-p^14)^5(1+5p^14), about 87% at 0.95.
		{"about 87% at 0.95", 6, 14, 2, 0.95, 0.875, 0.88},
		// Figure 3.2: at 0.7 "just under one in a thousand".
		{"just under 1/1000 at 0.7", 6, 14, 2, 0.7, 0.0005, 0.001},
		{"bing at 0.99", 6, 5, 4, 0.99, 0.997, 0.999},
		{"bing at 0.95", 6, 5, 4, 0.95, 0.86, 0.87},
		{"bing low at 0.7", 6, 5, 4, 0.7, 0.005, 0.015},
		{"r=0 always", 6, 14, 0, 0.1, 1, 1},
		{"identical", 6, 14, 6, 1, 1, 1},
		{"disjoint", 6, 14, 1, 0, 0, 0},
	} {
		if got := FilterProbability(tc.k, tc.s, tc.r, tc.j); got < tc.lo || got > tc.hi {
			t.Errorf("%s: P(%d,%d,%d)(%g) = %.6g, want in [%g, %g]", tc.name, tc.k, tc.s, tc.r, tc.j, got, tc.lo, tc.hi)
		}
	}
	// Closed form from the book for r=2.
	for _, j := range []float64{0.5, 0.8, 0.9, 0.95, 0.99} {
		p := math.Pow(j, 14)
		want := 1 - math.Pow(1-p, 5)*(1+5*p)
		if got := FilterProbability(6, 14, 2, j); math.Abs(got-want) > 1e-12 {
			t.Errorf("P(6,14,2)(%g) = %g, closed form %g", j, got, want)
		}
	}
}

func TestFilterHalfPoint(t *testing.T) {
	t.Parallel()
	// Broder: P(6,14,2)(x) = 1/2 for x = 0.909...
	for _, tc := range []struct {
		k, s, r int
		lo, hi  float64
	}{{6, 14, 2, 0.909, 0.910}} {
		lo, hi := 0.0, 1.0
		for range 60 {
			m := (lo + hi) / 2
			if FilterProbability(tc.k, tc.s, tc.r, m) < 0.5 {
				lo = m
			} else {
				hi = m
			}
		}
		if lo < tc.lo || lo > tc.hi {
			t.Errorf("P(%d,%d,%d) crosses 1/2 at %.5f, want in [%g, %g]", tc.k, tc.s, tc.r, lo, tc.lo, tc.hi)
		}
	}
}

func TestCurveUsesConfiguredFilter(t *testing.T) {
	t.Parallel()
	js := []float64{0.5, 0.9, 0.95, 1}
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		d := newTestDetector(t, func(o *Options) { o.Filter.Preset = preset })
		f := (FilterOptions{Preset: preset}).Resolved()
		got := d.FilterCurve(js)
		for i, j := range js {
			if want := FilterProbability(f.K, f.S, f.R, j); got[i] != want {
				t.Errorf("%s: FilterCurve(%g) = %g, want %g", preset, j, got[i], want)
			}
		}
		// The pipeline's curve covers the filter's at every J.
		for i, p := range d.Curve(js) {
			if p < got[i] {
				t.Errorf("%s: Curve(%g) = %g below the filter's %g", preset, js[i], p, got[i])
			}
		}
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Errorf("%s: curve not monotone: %v", preset, got)
			}
		}
	}
}

func TestCombinations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ k, r, want int }{{6, 2, 15}, {6, 4, 15}, {6, 6, 1}, {5, 1, 5}, {10, 3, 120}} {
		cs := combinations(tc.k, tc.r)
		if len(cs) != tc.want {
			t.Errorf("C(%d,%d): %d subsets, want %d", tc.k, tc.r, len(cs), tc.want)
		}
		seen := map[[8]uint8]bool{}
		for _, c := range cs {
			var key [8]uint8
			copy(key[:], c)
			if seen[key] || len(c) != tc.r {
				t.Errorf("C(%d,%d): bad or repeated subset %v", tc.k, tc.r, c)
			}
			seen[key] = true
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tc := range []struct {
		name  string
		mod   func(*Options)
		wants int // number of distinct problems reported
	}{
		{"threshold too low", func(o *Options) { o.Threshold = 0.5 }, 1},
		{"unknown preset and index", func(o *Options) { o.Filter.Preset = "x"; o.SimhashIndex = "y" }, 2},
		{"custom needs too many samples", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 10, S: 10, R: 2, Bits: 64}
		}, 1},
		{"custom bad bits and r", func(o *Options) {
			o.Filter = FilterOptions{Preset: PresetCustom, K: 4, S: 5, R: 5, Bits: 12}
		}, 2},
		{"bphs g too large", func(o *Options) { o.SimhashIndex = IndexBPHS; o.BPHSBlocks = 4; o.BPHSHeader = 2 }, 1},
		{"everything", func(o *Options) {
			o.ShingleWords, o.Samples, o.SimhashK, o.PSMBudget, o.MaxCandidates, o.SimhashWeight = -1, 0, 99, -1, -1, "z"
		}, 6},
	} {
		o := DefaultOptions()
		tc.mod(&o)
		err := o.Validate()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n < tc.wants {
			t.Errorf("%s: %d problems reported, want >= %d: %v", tc.name, n, tc.wants, err)
		}
	}
	if _, err := New(Options{Threshold: 0.3}); err == nil {
		t.Error("New accepted threshold 0.3")
	}
}

// The default band stage tiles the AltaVista supershingles: the candidate
// curve is P(12,7,1), at least 0.99 from J = 0.85.
func TestCandidateProbability(t *testing.T) {
	t.Parallel()
	f := (FilterOptions{Preset: PresetAltaVista}).Resolved()
	for _, j := range []float64{0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1} {
		got := CandidateProbability(f, DefaultBands, DefaultBandRows, j)
		if want := FilterProbability(12, 7, 1, j); got != want {
			t.Errorf("CandidateProbability(%g) = %g, want P(12,7,1) = %g", j, got, want)
		}
		if j >= 0.85 && got < 0.99 {
			t.Errorf("CandidateProbability(%g) = %g, want >= 0.99", j, got)
		}
		if off := CandidateProbability(f, -1, 0, j); off != FilterProbability(6, 14, 2, j) {
			t.Errorf("bands off: CandidateProbability(%g) = %g, want the filter's", j, off)
		}
	}
}

// Equal bands give equal keys, and one changed sample changes only its band's.
func TestBandKeys(t *testing.T) {
	t.Parallel()
	sk := make([]uint64, 84)
	for i := range sk {
		sk[i] = mix64(uint64(i))
	}
	a := BandKeys(sk, 12, 7, nil)
	sk[20]++ // band 2
	b := BandKeys(sk, 12, 7, nil)
	if len(a) != 12 || len(b) != 12 {
		t.Fatalf("got %d and %d keys, want 12", len(a), len(b))
	}
	for i := range a {
		if (a[i] == b[i]) != (i != 2) {
			t.Errorf("band %d: keys %x and %x", i, a[i], b[i])
		}
	}
	if got := BandKeys(sk, 13, 7, nil); len(got) != 0 {
		t.Errorf("13 bands of 7 over 84 samples: %d keys, want none", len(got))
	}
}

// Bands that need more samples than the sketch has are rejected; bands < 0
// turn the stage off.
func TestBandOptionsValidate(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Bands, o.BandRows = 13, 7
	if err := o.Validate(); err == nil {
		t.Error("13 bands of 7 over 84 samples accepted")
	}
	o.Bands = -1
	if err := o.Validate(); err != nil {
		t.Errorf("bands off: %v", err)
	}
}
