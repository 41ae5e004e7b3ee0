package dedup

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestExactJaccard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b []uint64
		want float64
	}{
		{"both empty", nil, nil, 1},
		{"one empty", []uint64{1}, nil, 0},
		{"identical", []uint64{3, 1, 2}, []uint64{1, 2, 3}, 1},
		{"disjoint", []uint64{1, 2}, []uint64{3, 4}, 0},
		{"repeats count once", []uint64{1, 1, 1, 2}, []uint64{2, 2, 3}, 1.0 / 3},
		{"half", []uint64{5, 6, 7}, []uint64{6, 7, 8}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExactJaccard(tc.a, tc.b); math.Abs(got-tc.want) > 1e-15 {
				t.Errorf("ExactJaccard = %g, want %g", got, tc.want)
			}
		})
	}
}

// binomialCDF is P(Binomial(n, p) < l), summed directly.
func binomialCDF(n, l int, p float64) float64 {
	sum := 0.0
	for k := range l {
		sum += binomialPMF(n, k, p)
	}
	return sum
}

// TestSettleFloor checks the band's lower edge against its definition: the
// largest L with P(Bin(n, t) < L) <= 1e-6, and the numbers the docs quote.
func TestSettleFloor(t *testing.T) {
	t.Parallel()
	if got := settleFloor(84, 0.90); got != 60 {
		t.Errorf("settleFloor(84, 0.90) = %d, want 60 (docs/DEDUP.md)", got)
	}
	for _, c := range []struct {
		l    int
		want float64
	}{{59, 1.01e-7}, {60, 4.09e-7}, {61, 1.56e-6}} {
		if p := binomialCDF(84, c.l, 0.90); math.Abs(p-c.want) > 0.01*c.want {
			t.Errorf("P(Bin(84, 0.90) < %d) = %.3g, docs say %.3g", c.l, p, c.want)
		}
	}
	if p := binomialCDF(84, 76, 0.90); math.Abs(p-0.466) > 0.001 {
		t.Errorf("P(Bin(84, 0.90) < 76) = %.3g, docs say 0.466", p)
	}
	// The floor of the earlier threshold, 0.95: 68 (docs/DEDUP.md compares).
	if got := settleFloor(84, 0.95); got != 68 {
		t.Errorf("settleFloor(84, 0.95) = %d, want 68", got)
	}
	if p := binomialCDF(84, 68, 0.95); math.Abs(p-7.77e-7) > 0.01e-7 {
		t.Errorf("P(Bin(84, 0.95) < 68) = %.3g, docs say 7.77e-7", p)
	}
	for _, n := range []int{16, 84, 200, 1024} {
		for _, th := range []float64{0.75, 0.8, 0.9, 0.95, 0.99, 1} {
			l := settleFloor(n, th)
			top := int(math.Ceil(th*float64(n) - 1e-9))
			if l > top {
				t.Errorf("n=%d t=%g: floor %d above ceil(t*n) = %d", n, th, l, top)
			}
			if p := binomialCDF(n, l, th); p > SettleMissBound {
				t.Errorf("n=%d t=%g: P(Bin < %d) = %.3g > %g", n, th, l, p, SettleMissBound)
			}
			if l < top {
				if p := binomialCDF(n, l+1, th); p <= SettleMissBound {
					t.Errorf("n=%d t=%g: floor %d is not the largest: P(Bin < %d) = %.3g", n, th, l, l+1, p)
				}
			}
		}
	}
	if d := newTestDetector(t, nil); d.SettleFloor() != 60 {
		t.Errorf("default detector settles from %d samples, want 60", d.SettleFloor())
	}
}

func curveTable(pts []EndToEndPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %5s %7s %8s %8s\n", "J", "words", "theory", "settled", "sketch")
	for _, p := range pts {
		fmt.Fprintf(&b, "%7.4f %5d %7.3f %8.3f %8.3f\n", p.J, p.Words, p.Theory, p.Settled, p.Sketch)
	}
	return b.String()
}

// TestEndToEndRecall: with exact settlement, a pair at J >= the threshold
// (0.90) is dropped at least as often as the filter proposes it, P(k,s,r)(J),
// for AltaVista's filter and Bing's: at J = 0.90, 0.93, 0.95 and 0.97. Over
// N = 2000 pairs the measured share has a standard deviation of at most
// sqrt(P(1-P)/N) (0.011 at P = 0.5): the test allows 4 of them (a one-sided
// chance of 3e-5 that a sound detector fails; the seed is fixed, so the
// outcome is too). The sketch rule (at least 76 of 84 samples) drops 0.37
// (AltaVista) and 0.39 (Bing) of the pairs at J = 0.90, where the filter
// proposes 0.42 and 0.53, and fails this test; so does the threshold 0.95
// this replaced, which drops none below 0.95.
func TestEndToEndRecall(t *testing.T) {
	if raceEnabled {
		t.Skip("EndToEndCurve runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	t.Parallel()
	const pairs = 2000
	js := []float64{0.90, 0.93, 0.95, 0.97}
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		t.Run(preset, func(t *testing.T) {
			o := DefaultOptions()
			o.Filter.Preset = preset
			pts, err := EndToEndCurve(o, js, pairs, 17)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, %d pairs per row:\n%s", preset, pairs, curveTable(pts))
			for i, p := range pts {
				if p.J < js[i] || p.J > js[i]+0.002 {
					t.Errorf("pairs at J = %g, want %g", p.J, js[i])
				}
				tol := 4 * math.Sqrt(p.Theory*(1-p.Theory)/pairs)
				if p.Settled < p.Theory-tol {
					t.Errorf("J = %.4f: %.3f of the pairs dropped, want at least P(k,s,r)(J) = %.3f - %.3f", p.J, p.Settled, p.Theory, tol)
				}
			}
		})
	}
}

// TestEndToEndPrecision: with exact settlement no pair below the threshold
// (0.90) is dropped, whatever its sketch estimate: not at J < 0.80 (the
// issue's bound) and not just below 0.90, where the sketch rule (76 of 84)
// drops 0.07 of the pairs at J = 0.85 and 0.19 at J = 0.88 (AltaVista).
func TestEndToEndPrecision(t *testing.T) {
	if raceEnabled {
		t.Skip("EndToEndCurve runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	t.Parallel()
	const pairs = 1000
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		t.Run(preset, func(t *testing.T) {
			o := DefaultOptions()
			o.Filter.Preset = preset
			pts, err := EndToEndCurve(o, []float64{0.5, 0.7, 0.79, 0.85, 0.88, 0.89, 0.897}, pairs, 18)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, %d pairs per row:\n%s", preset, pairs, curveTable(pts))
			for _, p := range pts {
				if p.J >= o.Threshold {
					t.Fatalf("pairs at J = %g, want below %g", p.J, o.Threshold)
				}
				if p.Settled != 0 {
					t.Errorf("J = %.4f: %.3f of %d pairs dropped, want none", p.J, p.Settled, pairs)
				}
			}
		})
	}
}

// TestEndToEndCurvePairs: the constructed pairs have the exact Jaccard the
// point reports, at least the J asked for and within 0.002 of it.
func TestEndToEndCurvePairs(t *testing.T) {
	t.Parallel()
	d := newTestDetector(t, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, target := range []float64{0.3, 0.5, 0.79, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99, 1} {
		n, c := pairShape(target, 5)
		want := float64(n-5*c) / float64(n+5*c)
		if want < target-1e-12 || want > target+0.002 {
			t.Errorf("target %g: shape n=%d c=%d gives J = %g", target, n, c, want)
		}
		for range 5 {
			a, b := curvePair(rng, n, c, 5)
			got := ExactJaccard(d.Shingles(a, nil), d.Shingles(b, nil))
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("target %g: pair has J = %g, want %g", target, got, want)
			}
		}
	}
	if _, err := EndToEndCurve(DefaultOptions(), []float64{0.2}, 10, 1); err == nil {
		t.Error("J = 0.2 accepted")
	}
}

// TestSettleBound: candidates in the band are settled best estimate first,
// at most MaxSettle per page; a candidate the Settler cannot read falls back
// to the sketch rule; a settled decision reports the exact similarity.
func TestSettleBound(t *testing.T) {
	t.Parallel()
	base := benchTokens(3000, 40)
	variants := make([][]string, 6)
	for i := range variants {
		variants[i] = edit(base, 5+5*i, uint64(50+i)) // J about 0.99 .. 0.95 with base
	}
	page := edit(base, 2, 60)
	build := func() *Detector {
		d := newTestDetector(t, nil)
		for i, v := range variants {
			d.Add(uint64(i+1), d.Sign(v))
		}
		return d
	}
	sig := build().Sign(page)

	var calls []uint64
	d := build()
	dec := d.CheckAndAddSettled(100, sig, func(orig uint64) (float64, bool) {
		calls = append(calls, orig)
		return 0.5, true
	})
	if dec.Class != Unique {
		t.Errorf("every settlement below the threshold, decision %+v", dec)
	}
	if len(calls) != MaxSettle {
		t.Errorf("settled %v, want %d settlements", calls, MaxSettle)
	}
	// Best estimate first: the variants with fewer edits.
	var ests []float64
	for _, id := range calls {
		ests = append(ests, Similarity(sig, d.Sign(variants[id-1])))
	}
	for i := 1; i < len(ests); i++ {
		if ests[i] > ests[i-1] {
			t.Errorf("settled %v with estimates %v: not best first", calls, ests)
		}
	}

	d = build()
	dec = d.CheckAndAddSettled(100, sig, func(orig uint64) (float64, bool) { return 0.96, true })
	if dec.Class != Near || !dec.Settled || dec.Similarity != 0.96 || dec.Original != calls[0] {
		t.Errorf("settled at 0.96: decision %+v, want near, settled, similarity 0.96, original %d", dec, calls[0])
	}

	d = build()
	want := build().CheckAndAdd(100, sig)
	dec = d.CheckAndAddSettled(100, sig, func(uint64) (float64, bool) { return 0, false })
	if dec != want {
		t.Errorf("unreadable candidates: decision %+v, want the sketch rule's %+v", dec, want)
	}
}
