package mirror

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestPickPairSymmetric: a pair is picked or not whichever side is the
// copy, on whatever hosts and ports, with or without an HTML extension on
// one side; and a different seed is a different pick.
func TestPickPairSymmetric(t *testing.T) {
	differ := 0
	for i := range 2000 {
		a := fmt.Sprintf("http://127.0.0.1:%d/v1/x/p%d.html", 1000+i, i)
		b := fmt.Sprintf("http://127.0.0.2:%d/v2/x/p%d.html", 2000+i, i)
		c := fmt.Sprintf("http://127.0.0.3/x/p%d", i)
		rest := fmt.Sprintf("x/p%d", i)
		if SharedPath(a, b) != rest || SharedPath(b, a) != rest || SharedPath(a, c) != rest {
			t.Fatalf("SharedPath(%s, %s) = %q, (%s, %s) = %q, want %q", a, b, SharedPath(a, b), a, c, SharedPath(a, c), rest)
		}
		if PickPair(7, 0.3, a, b) != PickPair(7, 0.3, b, a) || PickPair(7, 0.3, a, b) != PickPath(7, 0.3, rest) {
			t.Fatalf("pick of %s / %s depends on the order", a, b)
		}
		if PickPath(7, 0.3, rest) != PickPath(8, 0.3, rest) {
			differ++
		}
		if !PickPath(7, 1, rest) || PickPath(7, 0, rest) {
			t.Fatalf("rate 1 must pick and rate 0 must not")
		}
		// Monotone in r: a pick at r is a pick at any r' > r.
		if PickPath(7, 0.2, rest) && !PickPath(7, 0.3, rest) {
			t.Fatalf("%s picked at 0.2, not at 0.3", rest)
		}
	}
	if differ == 0 {
		t.Errorf("seeds 7 and 8 pick the same 2,000 paths")
	}
	if got := SharedPath("http://a/x/index.html", "http://b/y/x/"); got != "x/" {
		t.Errorf("SharedPath of a directory and its index.html = %q, want x/", got)
	}
}

// TestLossArithmetic: the stated loss bound, from its definition.
func TestLossArithmetic(t *testing.T) {
	for _, r := range []float64{0.01, 0.05, 0.2, 0.5} {
		worst, at := WorstExpectedLoss(r)
		for d := 1; d <= 2000; d++ {
			if l := ExpectedLoss(r, d); l > worst+1e-12 {
				t.Fatalf("r %v: loss %v at D %d above the worst %v (at %d)", r, l, d, worst, at)
			}
		}
		if want := ExpectedLoss(r, at); worst != want {
			t.Errorf("r %v: worst %v is not the loss at its D %d (%v)", r, worst, at, want)
		}
		// About 1 / (e r) pages, at D about 1 / r.
		if bound := 1 / (math.E * r); worst > bound {
			t.Errorf("r %v: worst expected loss %v above 1/(e r) = %v", r, worst, bound)
		}
	}
	if l, _ := WorstExpectedLoss(1); l != 0 {
		t.Errorf("fetching every page loses %v, want 0", l)
	}
	if l, _ := WorstExpectedLoss(0); !math.IsInf(l, 1) {
		t.Errorf("sampling nothing loses %v, want unbounded", l)
	}
}

// TestLinkMonitorFiresOnFirstDifference: the first sampled copy that is not
// a duplicate fires its pair's monitor once, and no other pair's.
func TestLinkMonitorFiresOnFirstDifference(t *testing.T) {
	m := NewLinkMonitor(DefaultLinkOptions())
	a := Mapping{FromOrigin: "http://a", FromPrefix: "/", ToOrigin: "http://b", ToPrefix: "/"}
	b := Mapping{FromOrigin: "http://c", FromPrefix: "/", ToOrigin: "http://b", ToPrefix: "/"}
	m.Register(Key(a), a)
	for range 5 {
		if m.Record(Key(a), a, false) || m.Fired(Key(a)) {
			t.Fatal("fired on duplicates")
		}
	}
	if !m.Record(Key(a), a, true) || !m.Fired(Key(a)) {
		t.Fatal("did not fire on a difference")
	}
	if m.Record(Key(a), a, true) {
		t.Error("fired twice")
	}
	if m.Fired(Key(b)) {
		t.Error("another pair fired")
	}
	p, _ := m.Pair(Key(a))
	if p.Sampled != 7 || p.Events != 2 || p.Mapping != a {
		t.Errorf("pair %+v, want 7 sampled, 2 events", p)
	}
}

// TestLinkOptionsValidate: every invalid option reported at once.
func TestLinkOptionsValidate(t *testing.T) {
	if err := DefaultLinkOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	err := LinkOptions{Policy: "sometimes", LinkSample: 1.5, VerifyShare: 0}.Validate()
	for _, want := range []string{"mirror.policy", "mirror.link_sample", "mirror.verify_share"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
