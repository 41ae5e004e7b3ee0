package mirror

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func feed(d *Detector, key string, n, matched int) Event {
	var last Event
	for i := 0; i < n; i++ {
		if ev := d.Compare(key, i < matched, true); ev != NoChange {
			last = ev
		}
	}
	return last
}

func TestDecisionAndSkip(t *testing.T) {
	d := NewDetector(Options{Sample: 10, VerifyEvery: 4})
	key := d.Propose("http://b/pgsql/15.18/index.html", "http://a/docs/15/")
	if key == "" {
		t.Fatal("no candidate")
	}
	if again := d.Propose("http://b/pgsql/15.18/sql.html", "http://a/docs/15/sql.html"); again != key {
		t.Fatalf("same mapping gave another key %q", again)
	}
	// Host b's page was the first copy, even though host b is ahead (it
	// has pages host a lacks): host b is the mirror.
	d.Observe("http://b/pgsql/15.18/x.html")
	d.Observe("http://b/pgsql/15.18/y.html")
	d.Observe("http://a/docs/15/x.html")
	if _, _, ok := d.SkipTarget("http://b/pgsql/15.18/x.html"); ok {
		t.Fatal("skipping before a decision")
	}
	// At the defaults the test decides after ceil(ln(99)/ln(1.6)) = 10
	// matches in a row.
	need := int(math.Ceil(d.t.accept / d.t.match))
	if need != 10 {
		t.Fatalf("matches in a row to decide: %d, want 10 at the defaults", need)
	}
	if ev := feed(d, key, need-1, need-1); ev != NoChange {
		t.Fatalf("decided after %d comparisons: %v", need-1, ev)
	}
	if ev := d.Compare(key, true, false); ev != DecidedNow {
		t.Fatalf("%d/%d matches: %v, want DecidedNow", need, need, ev)
	}
	k, cp, ok := d.SkipTarget("http://b/pgsql/15.18/a/b.html")
	if !ok || k != key || cp != "http://a/docs/15/a/b.html" {
		t.Fatalf("SkipTarget = %q %q %v", k, cp, ok)
	}
	if _, _, ok := d.SkipTarget("http://a/docs/15/a/b.html"); ok {
		t.Fatal("the original side must never be skipped")
	}
	if cu, k, ok := d.CopyOf("http://a/docs/15/release-1.html"); !ok || cu != "http://b/pgsql/15.18/release-1.html" || k != key {
		t.Fatalf("CopyOf = %q %q %v", cu, k, ok)
	}
	if _, _, ok := d.CopyOf("http://b/pgsql/15.18/x.html"); ok {
		t.Fatal("CopyOf maps the original side only")
	}
	// Gap probes: at most Sample outstanding, direct ones first; after
	// 2 x Sample resolved with fewer than one in five hits, the backlog is
	// dropped.
	d.AddGap(key, Gap{URL: "http://b/pgsql/15.18/linker.html", Linker: true})
	for i := 0; i < 30; i++ {
		d.AddGap(key, Gap{URL: fmt.Sprintf("http://b/pgsql/15.18/g%d.html", i)})
	}
	first := d.NextGaps(key)
	if len(first) != 10 || len(d.NextGaps(key)) != 0 {
		t.Fatalf("issued %d probes at once, want 10 and no more until results come", len(first))
	}
	for _, g := range first {
		if g.Linker {
			t.Fatal("a linker probe went before direct ones")
		}
		d.GapResult(key, g.Linker, false)
	}
	second := d.NextGaps(key)
	if len(second) != 10 {
		t.Fatalf("second round issued %d, want 10 (fewer than 2 x Sample resolved)", len(second))
	}
	for _, g := range second {
		d.GapResult(key, g.Linker, false)
	}
	if more := d.NextGaps(key); len(more) != 0 {
		t.Fatalf("%d more probes after 20 fruitless ones", len(more))
	}
	d2 := NewDetector(DefaultOptions())
	k2 := d2.Propose("http://m/a/x.html", "http://o/b/x.html")
	feed(d2, k2, 10, 10)
	for i := 0; i < 30; i++ {
		d2.AddGap(k2, Gap{URL: fmt.Sprintf("http://m/a/g%d.html", i)})
	}
	issued := 0
	for round := 0; round < 5; round++ {
		g := d2.NextGaps(k2)
		issued += len(g)
		for _, x := range g {
			d2.GapResult(k2, x.Linker, true)
		}
	}
	if issued != 30 {
		t.Fatalf("fruitful probing issued %d of 30", issued)
	}
	if _, _, ok := d.SkipTarget("http://b/other/x.html"); ok {
		t.Fatal("outside the prefix")
	}
	// One in VerifyEvery is fetched instead of skipped.
	skips := 0
	for i := 0; i < 8; i++ {
		if d.Skip(key) {
			skips++
		}
	}
	if skips != 6 {
		t.Errorf("skipped %d of 8 with VerifyEvery 4, want 6", skips)
	}
	// Comparisons after the decision that are not verification picks
	// count for nothing.
	if ev := d.Compare(key, false, false); ev != NoChange {
		t.Fatalf("non-verification comparison after the decision: %v", ev)
	}
	if c, _ := d.Candidate(key); c.Verified != 0 {
		t.Fatalf("Verified = %d, want 0", c.Verified)
	}
	// One mismatch in the stream does not withdraw a sound decision...
	if ev := feed(d, key, 10, 9); ev != NoChange {
		t.Fatalf("9/10 verification matches: %v, want NoChange", ev)
	}
	// ...a stream that stops matching does.
	if ev := feed(d, key, 10, 0); ev != WithdrawnNow {
		t.Fatalf("0/10 verification matches: %v, want WithdrawnNow", ev)
	}
	if _, _, ok := d.SkipTarget("http://b/pgsql/15.18/a/b.html"); ok {
		t.Fatal("still skipping after withdrawal")
	}
}

func TestMirrorSideIsTheFirstCopy(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://b/x.html", "http://a/x.html")
	// Samples fetched early on the idle mirror make later pairs point the
	// other way; the first pair decides.
	for i := 0; i < 5; i++ {
		d.Propose(fmt.Sprintf("http://a/%d.html", i), fmt.Sprintf("http://b/%d.html", i))
	}
	feed(d, key, 10, 10)
	c, _ := d.Candidate(key)
	if m := c.MirrorMapping(); m.FromOrigin != "http://b" || c.CopiesB != 5 {
		t.Fatalf("mirror side %s (copies %d/%d), want http://b", m.FromOrigin, c.CopiesA, c.CopiesB)
	}
}

func TestNoDecisionBelowScore(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://h4/doc/git/git.html", "http://h5/v2.39/git.html")
	// 20% matching (two builds of one documentation set): rejected within a
	// handful of comparisons, and never decided however long it goes on.
	rejected := 0
	for i := 0; i < 1000; i++ {
		switch d.Compare(key, i%5 == 0, false) {
		case WithdrawnNow:
			if rejected == 0 {
				rejected = i + 1
			}
		case DecidedNow:
			t.Fatalf("20%% matching decided at comparison %d", i+1)
		}
	}
	if rejected == 0 || rejected > 10 {
		t.Fatalf("rejected at comparison %d, want within 10", rejected)
	}
	if _, ok := d.CopyMapping("http://h4/doc/git/x.html"); ok {
		t.Fatal("a rejected candidate still restrains its copy side")
	}
	c, _ := d.Candidate(key)
	if c.Decided || d.Qualified(c) {
		t.Fatal("two-source near-duplicates must not become a mirror")
	}
}

// TestSequentialTestErrorRates: over many simulated candidates, the test's
// error rates are within the stated ones: a candidate whose shared paths
// match at other_share (0.5) is decided a mirror in at most false_mirror (1%)
// of them, one at mirror_share (0.8) is rejected in at most missed_mirror
// (1%), plus the point the truncation at MaxCompared adds to each, and each
// is settled within a few dozen comparisons.
func TestSequentialTestErrorRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	run := func(p float64) (decided bool, n int) {
		d := NewDetector(DefaultOptions())
		key := d.Propose("http://m/a/x.html", "http://o/b/x.html")
		for n = 1; n <= 500; n++ {
			switch d.Compare(key, rng.Float64() < p, false) {
			case DecidedNow:
				return true, n
			case WithdrawnNow:
				return false, n
			}
		}
		return false, n
	}
	const trials = 20000
	for _, tc := range []struct {
		p          float64
		wantMirror bool
		maxWrong   float64 // share of trials settled the wrong way
	}{
		{0.5, false, 0.02}, {0.3, false, 0.001}, {0.8, true, 0.02}, {0.9, true, 0.001}, {0.97, true, 0.001}, {1, true, 0},
	} {
		wrong, steps := 0, 0
		for i := 0; i < trials; i++ {
			dec, n := run(tc.p)
			steps += n
			if dec != tc.wantMirror {
				wrong++
			}
		}
		share := float64(wrong) / trials
		t.Logf("p=%.2f: settled the wrong way in %.4f of %d, %.1f comparisons on average", tc.p, share, trials, float64(steps)/trials)
		// Three standard errors of slack over the bound.
		if slack := 3 * math.Sqrt(tc.maxWrong*(1-tc.maxWrong)/trials); share > tc.maxWrong+slack {
			t.Errorf("p=%.2f: settled the wrong way in %.4f of trials, want at most %.4f", tc.p, share, tc.maxWrong)
		}
		if avg := float64(steps) / trials; avg > 40 {
			t.Errorf("p=%.2f: %.1f comparisons on average, want a few dozen at most", tc.p, avg)
		}
	}
}

func TestSameHostIsReportedNotSkipped(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://h/npm/v10.9.2/commands/npm.html", "http://h/npm/v10.9.1/commands/npm.html")
	feed(d, key, 10, 10)
	c, _ := d.Candidate(key)
	if !c.SameHost() || !d.Qualified(c) {
		t.Fatalf("replicated prefix not qualified: %+v", c)
	}
	if _, _, ok := d.SkipTarget("http://h/npm/v10.9.2/x.html"); ok {
		t.Fatal("same-host prefixes must not be skipped")
	}
}

func TestCounterpartsBothDirectionsAndRestore(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://m/", "http://o/")
	got := d.Counterparts("http://o/blog/p.html")
	if len(got) != 1 || got[0].URL != "http://m/blog/p.html" || got[0].Side != SideB {
		t.Fatalf("counterparts %+v", got)
	}
	feed(d, key, 10, 10)
	d2 := NewDetector(DefaultOptions())
	if err := d2.Restore(d.Candidates()); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := d2.SkipTarget("http://m/x"); !ok {
		t.Fatal("decision lost across restore")
	}
	if err := d2.Restore([]Candidate{{}}); err == nil {
		t.Fatal("bad candidate accepted")
	}
}

func TestMaxCandidates(t *testing.T) {
	d := NewDetector(Options{MaxCandidates: 3})
	n := 0
	for i := 0; i < 10; i++ {
		if d.Propose(fmt.Sprintf("http://m%d/x.html", i), "http://o/x.html") != "" {
			n++
		}
	}
	if n != 3 || len(d.Candidates()) != 3 {
		t.Fatalf("candidates %d, want 3", n)
	}
}

func TestWantSample(t *testing.T) {
	d := NewDetector(Options{MaxCompared: 9})
	m, _ := Infer("http://b/x.html", "http://a/x.html")
	key := d.Propose("http://b/x.html", "http://a/x.html")
	if Key(m) != key {
		t.Fatalf("Key %q != %q", Key(m), key)
	}
	n := 0
	for i := 0; i < 20; i++ {
		if d.WantSample(key) {
			n++
		}
	}
	if n != 9 {
		t.Fatalf("sampled %d copies, want MaxCompared = 9", n)
	}
	d2 := NewDetector(Options{Sample: 3})
	k2 := d2.Propose("http://b/x.html", "http://a/x.html")
	feed(d2, k2, 10, 10)
	if d2.WantSample(k2) {
		t.Fatal("decided candidates need no samples")
	}
	if d2.WantSample("nope") {
		t.Fatal("unknown candidate")
	}
}

func TestCopyMapping(t *testing.T) {
	d := NewDetector(DefaultOptions())
	d.Propose("http://b/latest/git.html", "http://a/v2.55/git.html")
	m, ok := d.CopyMapping("http://b/latest/x/y.html")
	if !ok || m.ToOrigin != "http://a" || m.ToPrefix != "/v2.55/" {
		t.Fatalf("CopyMapping = %+v %v", m, ok)
	}
	if _, ok := d.CopyMapping("http://a/v2.55/x.html"); ok {
		t.Fatal("the original side is not a copy")
	}
	d.Propose("http://h/manual/pt-br/x.html", "http://h/manual/en/x.html")
	if _, ok := d.CopyMapping("http://h/manual/pt-br/y.html"); ok {
		t.Fatal("same-host candidates are never presumed copies")
	}
}

func TestPartialMirrorDecidedAfterRejection(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://b/pgsql/15.18/index.html", "http://a/docs/15/")
	// Table-of-contents pages first (they differ where sections are
	// missing): the candidate is rejected, and the copies skipped so far are
	// fetched again.
	rejected := false
	for i := 0; i < 30; i++ {
		switch d.Compare(key, i%10 >= 7, false) {
		case WithdrawnNow:
			rejected = true
		case DecidedNow:
			t.Fatalf("decided at comparison %d at 30%% matching", i+1)
		}
	}
	if !rejected {
		t.Fatal("30% matching was not rejected")
	}
	// Later pages match (fetched anyway now): the candidate is decided after
	// the test's climb from the lower bound to the upper one.
	c, _ := d.Candidate(key)
	climb := int(math.Ceil((d.t.accept - c.LLR) / d.t.match))
	for i := 1; i <= climb; i++ {
		ev := d.Compare(key, true, false)
		if (ev == DecidedNow) != (i == climb) {
			t.Fatalf("match %d of the climb of %d: %v", i, climb, ev)
		}
	}
	if c, _ := d.Candidate(key); !c.Decided || c.Withdrawn || climb > 20 {
		t.Fatalf("after the climb: %+v", c)
	}
}

func TestCopyMappingPrefersBestSupported(t *testing.T) {
	d := NewDetector(DefaultOptions())
	// A few near-duplicates with another build of the site come first...
	weak := d.Propose("http://m/latest/a.html", "http://other/doc/git/a.html")
	// ...then the real original, with more pairs and matching paths.
	strong := d.Propose("http://m/latest/b.html", "http://orig/v2.55/b.html")
	d.Propose("http://m/latest/c.html", "http://orig/v2.55/c.html")
	d.Compare(strong, true, false)
	d.Compare(weak, false, false)
	m, ok := d.CopyMapping("http://m/latest/x.html")
	if !ok || m.ToOrigin != "http://orig" {
		t.Fatalf("CopyMapping chose %+v, want the candidate with matching paths", m)
	}
}

// The verification stream withdraws a decision on evidence, not on chance:
// a sound mirror whose pages match 90% of the time keeps its decision through
// a long stream in all but a few of 1,000 crawls, while a decision whose
// skipped pages match half the time is withdrawn within 100 verifications in
// nearly every crawl (the test takes about 9 at that share, from a start at 0).
func TestWithdrawalIsStatistical(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(p float64, n int) (withdrawnAt int) {
		d := NewDetector(DefaultOptions())
		key := d.Propose("http://m/a/x.html", "http://o/b/x.html")
		feed(d, key, 10, 10)
		for i := 1; i <= n; i++ {
			if d.Compare(key, rng.Float64() < p, true) == WithdrawnNow {
				return i
			}
		}
		return 0
	}
	lost := 0
	for i := 0; i < 1000; i++ {
		if run(0.9, 100) != 0 {
			lost++
		}
	}
	if lost > 20 {
		t.Errorf("a 90%% mirror lost its decision in %d of 1000 streams of 100", lost)
	}
	kept := 0
	for i := 0; i < 1000; i++ {
		if at := run(0.5, 100); at == 0 {
			kept++
		}
	}
	if kept > 20 {
		t.Errorf("a 50%% 'mirror' kept its decision through 100 verifications in %d of 1000 streams", kept)
	}
}

// A copy skipped while its counterpart was queued is sampled when the
// counterpart arrives, in either direction, while the candidate is undecided
// and under its sample cap; never against a page that is not its counterpart.
func TestSampleKeyWhenCounterpartArrives(t *testing.T) {
	d := NewDetector(DefaultOptions())
	key := d.Propose("http://m/latest/a.html", "http://o/v2/a.html")
	if !d.WantsSamples("http://o/v2/b.html") || !d.WantsSamples("http://m/latest/b.html") {
		t.Fatal("undecided candidate wants no samples on one of its sides")
	}
	if d.WantsSamples("http://o/other/b.html") {
		t.Fatal("samples wanted against a page off both sides")
	}
	if _, ok := d.SampleKey("http://m/latest/b.html", "http://o/v2/c.html"); ok {
		t.Fatal("sampled a copy against a page that is not its counterpart")
	}
	if k, ok := d.SampleKey("http://o/v2/b.html", "http://m/latest/b.html"); !ok || k != key {
		t.Fatal("a copy on the original side (pairs the other way round) is not sampled")
	}
	n := 0
	for i := 0; i < 100; i++ {
		if k, ok := d.SampleKey(fmt.Sprintf("http://m/latest/%d.html", i), fmt.Sprintf("http://o/v2/%d.html", i)); ok {
			if !d.WantSample(k) {
				t.Fatal("SampleKey passed a candidate WantSample refuses")
			}
			n++
		}
	}
	if n != DefaultOptions().MaxCompared {
		t.Fatalf("%d samples drawn, want the cap of MaxCompared = %d", n, DefaultOptions().MaxCompared)
	}
	if d.WantsSamples("http://o/v2/b.html") {
		t.Fatal("samples still wanted past the cap")
	}
	d2 := NewDetector(DefaultOptions())
	k2 := d2.Propose("http://m/latest/a.html", "http://o/v2/a.html")
	feed(d2, k2, 10, 10)
	if _, ok := d2.SampleKey("http://m/latest/b.html", "http://o/v2/b.html"); ok || d2.WantsSamples("http://o/v2/b.html") {
		t.Fatal("a decided candidate still draws samples")
	}
}
