package crawl

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/mirror"
)

// logged round-trips an entry through the log's encoding (appendLog's JSON,
// decodeEvidence), as every worker reads it.
func logged(t *testing.T, ev mirrorEvidence) *mirrorEvidence {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeEvidence(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The pages compared under a candidate must be chosen without regard to how
// they compare. A worker whose detector does not hold a candidate yet (the
// log brings it a little after its first proposal) compares a page under it
// only when the page's own duplicate pair proposes it: a match by
// construction. Three Redis workers decided git's latest/ (2.55) a mirror of
// v2.39/ (43% of their paths' pages are duplicates) on ten such matches in a
// row, logged by a worker behind on the log while latest/ pages were
// recorded as duplicates of their v2.39/ counterparts; one process, which
// compares every page once the candidate exists, never did.
//
// The log replayed here: the first proposal (its comparison counts: it
// makes the candidate, as in one process), then a burst of proposing pairs
// from a worker that did not hold the candidate (Proposed, all matches), and
// the comparisons of a worker that held it, at a share of matches (2 in 5)
// below mirror.Options.OtherShare: not a mirror. The candidate must not be
// decided, and only the first proposal and the fair comparisons count.
func TestMirrorLogProposedComparisonsCountOnlyForTheFirstProposal(t *testing.T) {
	m := &mirrorRules{det: mirror.NewDetector(mirror.DefaultOptions())}
	const copyHead, origHead = "http://127.0.0.6/latest/", "http://127.0.0.5/v2.39/"
	key := mirror.Key(mirror.Mapping{FromOrigin: "http://127.0.0.6", FromPrefix: "/latest/", ToOrigin: "http://127.0.0.5", ToPrefix: "/v2.39/"})
	proposing := func(i int) mirrorEvidence {
		page := fmt.Sprintf("git-p%d.html", i)
		return mirrorEvidence{Worker: "behind",
			Propose:  &mirrorProposal{Copy: copyHead + page, Orig: origHead + page},
			Compared: []mirrorComparison{{Key: key, Match: true, Measured: true, Size: 22, Proposed: true}},
			Observe:  copyHead + page}
	}
	decided := func(when string) {
		t.Helper()
		c, ok := m.det.Candidate(key)
		if !ok {
			t.Fatalf("%s: no candidate %s", when, key)
		}
		if c.Decided {
			t.Fatalf("%s: latest/ and v2.39/ decided a mirror on %d of %d comparisons; the proposing pairs of a worker that did not hold the candidate were counted", when, c.Matched, c.Compared)
		}
	}
	for _, ch := range m.apply(logged(t, proposing(0))) {
		if ch.ev != mirror.NoChange {
			t.Fatalf("the first proposal changed %s: %v", ch.key, ch.ev)
		}
	}
	if c, _ := m.det.Candidate(key); c.Compared != 1 || c.Matched != 1 {
		t.Fatalf("after the proposal that makes the candidate: %d of %d compared matched, want its pair counted (1 of 1), as in one process", c.Matched, c.Compared)
	}
	burst := 3 * m.det.MaxCompared() // far more matches than the test needs
	for i := 1; i <= burst; i++ {
		m.apply(logged(t, proposing(i)))
		decided(fmt.Sprintf("after %d proposing pairs of a worker behind on the log", i))
	}
	c, _ := m.det.Candidate(key)
	if c.Compared != 1 || c.Pairs != burst+1 {
		t.Fatalf("after the burst: %d comparisons and %d pairs, want 1 comparison (the burst's do not count) and %d pairs (its proposals do)", c.Compared, c.Pairs, burst+1)
	}
	// A worker that holds the candidate compares every page whose
	// counterpart was fetched: 2 in 5 match.
	for i := range 2 * m.det.MaxCompared() {
		page := fmt.Sprintf("git-f%d.html", i)
		match := i%5 < 2
		m.apply(logged(t, mirrorEvidence{Worker: "current",
			Compared: []mirrorComparison{{Key: key, Match: match, Measured: true, Size: 300}},
			Observe:  origHead + page}))
		decided(fmt.Sprintf("after %d fair comparisons", i+1))
	}
	if c, _ := m.det.Candidate(key); c.Compared != 1+2*m.det.MaxCompared() {
		t.Errorf("%d comparisons counted, want the first proposal's and the %d fair ones", c.Compared, 2*m.det.MaxCompared())
	}
}

// A Proposed comparison counts when its entry's proposal makes the
// candidate, whichever worker logged it first; and an ordinary comparison
// counts whatever the entry proposes.
func TestMirrorLogProposedComparisonMakesItsCandidate(t *testing.T) {
	m := &mirrorRules{det: mirror.NewDetector(mirror.DefaultOptions())}
	key := mirror.Key(mirror.Mapping{FromOrigin: "http://b.test", FromPrefix: "/", ToOrigin: "http://a.test", ToPrefix: "/"})
	ev := mirrorEvidence{Worker: "w",
		Propose:  &mirrorProposal{Copy: "http://b.test/x", Orig: "http://a.test/x"},
		Compared: []mirrorComparison{{Key: key, Match: true, Identical: true, Proposed: true}}}
	m.apply(logged(t, ev))
	if c, ok := m.det.Candidate(key); !ok || c.Compared != 1 {
		t.Fatalf("candidate %s after its first proposal: %+v (held %v), want 1 comparison", key, c, ok)
	}
	ev.Propose = &mirrorProposal{Copy: "http://b.test/y", Orig: "http://a.test/y"}
	ev.Compared[0].Proposed = false
	m.apply(logged(t, ev))
	if c, _ := m.det.Candidate(key); c.Compared != 2 {
		t.Fatalf("a comparison by a worker that held the candidate: %d comparisons, want 2", c.Compared)
	}
}

// A mirror's direction is a function of the log: lacks (mirrorLack) are one
// event kind of the entries, survive their encoding, and two workers applying
// the same log decide the same direction and reverse it at the same entry
// (mirror.Detector.Lack).
func TestMirrorLogLacksDecideTheDirection(t *testing.T) {
	const copyHead, origHead = "http://127.0.0.2/guide/", "http://127.0.0.3/mirror/guide/"
	mp, ok := mirror.Infer(copyHead+"index.html", origHead+"index.html")
	if !ok {
		t.Fatal("no mapping")
	}
	key := mirror.Key(mp)
	var log []mirrorEvidence
	// The guide (side A, first seen as the copy) is decided the mirror on
	// a tie, then the original (side B) lacks a page the guide serves.
	log = append(log, mirrorEvidence{Propose: &mirrorProposal{Copy: copyHead + "index.html", Orig: origHead + "index.html"}})
	for i := range 12 {
		log = append(log, mirrorEvidence{Compared: []mirrorComparison{{Key: key, Match: true, Identical: true}},
			Observe: fmt.Sprintf("%sp%d.html", copyHead, i)})
	}
	log = append(log, mirrorEvidence{Lacks: []mirrorLack{{Key: key, Side: mirror.SideB}}})
	type step struct {
		at int
		ev mirror.Event
	}
	run := func() ([]step, mirror.Candidate) {
		m := &mirrorRules{det: mirror.NewDetector(mirror.DefaultOptions())}
		var steps []step
		for i, ev := range log {
			for _, ch := range m.apply(logged(t, ev)) {
				if ch.ev != mirror.NoChange {
					steps = append(steps, step{i, ch.ev})
				}
			}
		}
		c, _ := m.det.Candidate(key)
		return steps, c
	}
	s1, c1 := run()
	s2, c2 := run()
	if fmt.Sprint(s1) != fmt.Sprint(s2) || c1.Mirror != c2.Mirror {
		t.Fatalf("two workers applying one log: %v (mirror side %v) and %v (%v)", s1, c1.Mirror, s2, c2.Mirror)
	}
	if len(s1) != 2 || s1[0].ev != mirror.DecidedNow || s1[1] != (step{len(log) - 1, mirror.SwappedNow}) {
		t.Fatalf("changes %v, want the decision, then the swap at the lack (entry %d)", s1, len(log)-1)
	}
	if c1.Mirror != mirror.SideB || c1.LacksB != 1 || c1.Swaps != 1 {
		t.Fatalf("after the log: mirror side %v, lacks of B %d, swaps %d; want B the mirror after one swap", c1.Mirror, c1.LacksB, c1.Swaps)
	}
}
