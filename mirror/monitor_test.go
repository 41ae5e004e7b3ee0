package mirror

import (
	"math"
	"math/rand/v2"
	"testing"
)

// decided returns a detector with one decided cross-host candidate.
func decided(t *testing.T) (*Detector, string) {
	t.Helper()
	d := NewDetector(Options{})
	key := d.Propose("http://b.test/x/a.html", "http://a.test/y/a.html")
	for range 10 {
		d.Compare(key, true, false)
	}
	if c, _ := d.Candidate(key); !c.Decided {
		t.Fatal("not decided after 10 matches")
	}
	return d, key
}

// At the 0.1% loss target the first verified loss event stops the skipping
// (ln(q1/q0) = ln 200 > ln 99), however many quiet verifications came
// before; the decision stands and nothing is skipped under it any more.
func TestMonitorStopsAtFirstLossEvent(t *testing.T) {
	d, key := decided(t)
	for range 500 {
		if ev := d.Monitor(key, false); ev != NoChange {
			t.Fatalf("quiet verification changed the decision: %v", ev)
		}
	}
	if ev := d.Monitor(key, true); ev != HaltedNow {
		t.Fatalf("loss event: got %v, want HaltedNow", ev)
	}
	c, _ := d.Candidate(key)
	if !c.Decided || !c.Halted || c.LossEvents != 1 {
		t.Fatalf("after the loss event: %+v", c)
	}
	if _, _, ok := d.SkipTarget("http://b.test/x/b.html"); ok {
		t.Fatal("a halted mirror still skips")
	}
	if d.Skip(key) {
		t.Fatal("Skip on a halted mirror")
	}
	if _, ok := d.CopyMapping("http://b.test/x/b.html"); ok {
		t.Fatal("a halted mirror still presumes copies")
	}
}

// A looser loss target (above (1 - p1) / 99) needs more than one event: the
// stop rule follows from the target and the test's error rates.
func TestMonitorStopRuleFollowsTheTarget(t *testing.T) {
	d := NewDetector(Options{LossRate: 0.01})
	key := d.Propose("http://b.test/x/a.html", "http://a.test/y/a.html")
	for range 10 {
		d.Compare(key, true, false)
	}
	if ev := d.Monitor(key, true); ev != NoChange {
		t.Fatalf("one event at a 1%% target: %v", ev)
	}
	if ev := d.Monitor(key, true); ev != HaltedNow {
		t.Fatalf("two events in a row at a 1%% target: %v", ev)
	}
}

// The expected loss of docs/MIRRORS.md: D differing pages among the skipped,
// each verified with probability v, are lost only when none is verified:
// D (1 - v)^D on average. Simulated through the detector's own stream.
func TestMonitorExpectedLoss(t *testing.T) {
	const skipped, runs = 400, 4000
	r := rand.New(rand.NewPCG(1, 2))
	for _, differing := range []int{1, 5, 20, 100} {
		lost := 0
		for range runs {
			d, key := decided(t)
			perm := r.Perm(skipped)
			var missed int
			halted := false
			for _, i := range perm {
				diff := i < differing
				if d.Skip(key) {
					if diff {
						missed++
					}
					continue
				}
				if d.Monitor(key, diff) == HaltedNow {
					halted = true // everything skipped is queued again
					break
				}
			}
			if !halted {
				lost += missed
			}
		}
		got := float64(lost) / runs
		// One in VerifyEvery is verified (k of the skipped): none of the D
		// is among them with probability C(S-D, k) / C(S, k), about
		// (1 - v)^D for D small against S.
		k := skipped / DefaultOptions().VerifyEvery
		want := float64(differing)
		for i := range k {
			want *= float64(skipped-differing-i) / float64(skipped-i)
		}
		if got > want*1.25+0.05 || got < want*0.75-0.05 {
			t.Errorf("D=%d: %.2f pages lost on average, want about D C(S-D,k)/C(S,k) = %.2f", differing, got, want)
		}
	}
}

// Represents: a page w shingles long represents its copy when w >= 5s (s the
// candidate's systematic shingles), at Represented 0.80.
func TestRepresents(t *testing.T) {
	d := NewDetector(Options{})
	key := "a <> b"
	if !d.Represents(key, 3) {
		t.Fatal("no systematic difference known: any page represents its copy")
	}
	banner := make([]uint64, 40)
	for i := range banner {
		banner[i] = 1_000_000 + uint64(i)
	}
	for p := range SystematicPairs {
		page := make([]uint64, 300)
		for i := range page {
			page[i] = uint64(p*1000 + i)
		}
		d.Resemblance(key, page, append(append([]uint64{}, page...), banner...))
	}
	for _, c := range []struct {
		words int
		want  bool
	}{{199, false}, {200, true}, {1000, true}, {60, false}} {
		if got := d.Represents(key, c.words); got != c.want {
			t.Errorf("Represents(%d words, 40 systematic) = %v, want %v", c.words, got, c.want)
		}
	}
}

// The monitor's power against its own alternative: n verifications that all
// miss a loss rate of q1 = 1 - p1 happen with probability (1 - q1)^n, at most
// beta from PowerVerifications on and not before.
func TestPowerVerifications(t *testing.T) {
	for _, o := range []Options{DefaultOptions(), {MirrorShare: 0.9, OtherShare: 0.5, MissedMirror: 0.05}} {
		n := PowerVerifications(o)
		q1 := 1 - o.MirrorShare
		if math.Pow(1-q1, float64(n)) > o.MissedMirror || math.Pow(1-q1, float64(n-1)) <= o.MissedMirror {
			t.Errorf("%+v: %d verifications, miss probability %.4f (at %d: %.4f), beta %g",
				o, n, math.Pow(1-q1, float64(n)), n-1, math.Pow(1-q1, float64(n-1)), o.MissedMirror)
		}
	}
	if n := PowerVerifications(DefaultOptions()); n != 21 {
		t.Errorf("defaults: %d, want 21 (ln 0.01 / ln 0.8 = 20.6)", n)
	}
}

// skips returns how many of the next n URLs the decision would skip are
// skipped (the others are verification picks).
func skips(d *Detector, key string, n int) (skipped int, picks []int) {
	for i := range n {
		if d.Skip(key) {
			skipped++
		} else {
			picks = append(picks, i)
		}
	}
	return skipped, picks
}

// A loss event among the comparisons made before the decision starts the
// verification stream with PowerVerifications picks in a row; without one
// the stream is the first URL, then one in VerifyEvery. A loss event on a
// page too short to represent its copy as the candidate's pairs typically
// differ (Represents) does not count: such copies are fetched, not skipped.
func TestMonitorPriorStartsTheStream(t *testing.T) {
	const long, short = 1000, 40
	run := func(prior func(d *Detector, key string)) []int {
		d := NewDetector(Options{})
		key := d.Propose("http://b.test/x/a.html", "http://a.test/y/a.html")
		// Three compared pairs differing in 20 shingles each: Represents
		// needs an original of at least 100 words.
		for i := range 3 {
			a, b := make([]uint64, 100), make([]uint64, 100)
			for j := range a {
				a[j], b[j] = uint64(1000*i+j), uint64(1000*i+j)
			}
			for j := range 10 {
				b[j] = uint64(1e6 + 1000*i + j)
			}
			d.Similarities(key, a, b)
		}
		prior(d, key)
		for range 10 {
			d.Compare(key, true, false)
		}
		if c, _ := d.Candidate(key); !c.Decided {
			t.Fatal("not decided")
		}
		d.MonitorPrior(key)
		_, picks := skips(d, key, 60)
		return picks
	}
	boosted := PowerVerifications(DefaultOptions())
	cases := []struct {
		name  string
		prior func(d *Detector, key string)
		picks int // picks among the first 60 skips
	}{
		{"no loss event", func(d *Detector, key string) {
			for range 5 {
				d.Prior(key, false, long)
			}
		}, 3}, // 0, 20, 40
		{"a loss event on a long page", func(d *Detector, key string) {
			d.Prior(key, false, long)
			d.Prior(key, true, long)
		}, boosted + 1}, // 0..20, then one in 20: 40
		{"a loss event on a short page", func(d *Detector, key string) {
			d.Prior(key, true, short)
		}, 3},
	}
	for _, tc := range cases {
		picks := run(tc.prior)
		if len(picks) != tc.picks {
			t.Errorf("%s: %d picks among 60 skips (%v), want %d", tc.name, len(picks), picks, tc.picks)
		}
		if len(picks) == 0 || picks[0] != 0 {
			t.Errorf("%s: the first URL the decision would skip is not verified (%v)", tc.name, picks)
		}
	}
}

// Comparisons after the decision are not prior evidence: they are the
// verification stream's (Monitor).
func TestPriorOnlyBeforeTheDecision(t *testing.T) {
	d, key := decided(t)
	d.Prior(key, true, 1000)
	if n := d.MonitorPrior(key); n != 0 {
		t.Fatalf("a loss event recorded after the decision started %d verifications", n)
	}
}
