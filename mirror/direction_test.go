package mirror

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// A candidate over a (copy first seen) and b: a/guide/ is side A.
const (
	dirA = "http://a/guide/"
	dirB = "http://b/mirror/guide/"
)

func newDirCandidate(t *testing.T, o Options) (*Detector, string) {
	t.Helper()
	d := NewDetector(o)
	key := d.Propose(dirA+"index.html", dirB+"index.html")
	if key == "" {
		t.Fatal("no candidate")
	}
	return d, key
}

func decide(t *testing.T, d *Detector, key string) {
	t.Helper()
	for range 100 {
		if d.Compare(key, true, false) == DecidedNow {
			return
		}
	}
	t.Fatal("not decided")
}

func mirrorSide(t *testing.T, d *Detector, key string) Side {
	t.Helper()
	c, _ := d.Candidate(key)
	if !c.Decided {
		t.Fatal("not decided")
	}
	return c.Mirror
}

// The decision makes the side that lacks more of what the other serves the
// mirror; on a tie, the side first seen as the copy (A).
func TestDirectionAtDecision(t *testing.T) {
	for _, tc := range []struct {
		name           string
		lacksA, lacksB int
		want           Side
		byLacks        bool
	}{
		{"no evidence", 0, 0, SideA, false},
		{"a tie", 2, 2, SideA, false},
		{"B lacks a page A serves", 0, 1, SideB, true},
		{"A lacks more", 3, 1, SideA, true},
		{"B lacks more", 1, 3, SideB, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, key := newDirCandidate(t, Options{})
			for range tc.lacksA {
				if ev := d.Lack(key, SideA); ev != NoChange {
					t.Fatalf("undecided Lack: %v", ev)
				}
			}
			for range tc.lacksB {
				d.Lack(key, SideB)
			}
			// Before the decision, the presumed copy follows the evidence.
			if got := d.CopySide(key); got != tc.want {
				t.Errorf("CopySide before the decision = %v, want %v", got, tc.want)
			}
			decide(t, d, key)
			c, _ := d.Candidate(key)
			if c.Mirror != tc.want || c.ByLacks != tc.byLacks {
				t.Errorf("mirror side %v (by lacks %v), want %v (%v)", c.Mirror, c.ByLacks, tc.want, tc.byLacks)
			}
			// SkipTarget and CopyOf follow the direction.
			mir, orig := dirA, dirB
			if tc.want == SideB {
				mir, orig = dirB, dirA
			}
			if _, cp, ok := d.SkipTarget(mir + "x.html"); !ok || cp != orig+"x.html" {
				t.Errorf("SkipTarget(mirror) = %q %v", cp, ok)
			}
			if _, _, ok := d.SkipTarget(orig + "x.html"); ok {
				t.Error("the original is skipped")
			}
			if cu, _, ok := d.CopyOf(orig + "x.html"); !ok || cu != mir+"x.html" {
				t.Errorf("CopyOf(original) = %q %v", cu, ok)
			}
		})
	}
}

// After the decision: the original's lacks count 1, the mirror's (seen at
// one in VerifyEvery) VerifyEvery; the direction is reversed when the
// original's weight is over twice the mirror's, and the mappings follow.
func TestDirectionSwap(t *testing.T) {
	const every = 20
	d, key := newDirCandidate(t, Options{VerifyEvery: every})
	decide(t, d, key)
	if mirrorSide(t, d, key) != SideA {
		t.Fatal("a tie must decide side A the mirror")
	}
	// One lack of the mirror, seen through the verification stream:
	// weight 20. The original (B) then needs 41 lacks to swap.
	if ev := d.Lack(key, SideA); ev != NoChange {
		t.Fatalf("a mirror's lack: %v", ev)
	}
	for i := 1; i <= 2*every; i++ {
		if ev := d.Lack(key, SideB); ev != NoChange {
			t.Fatalf("swapped after %d lacks of the original against a weight of %d", i, every)
		}
	}
	if ev := d.Lack(key, SideB); ev != SwappedNow {
		t.Fatalf("%d lacks of the original against %d: %v, want SwappedNow", 2*every+1, every, ev)
	}
	c, _ := d.Candidate(key)
	if c.Mirror != SideB || c.Swaps != 1 || !c.ByLacks || c.LacksA != 1 || c.LacksB != 2*every+1 {
		t.Fatalf("after the swap: mirror %v swaps %d by lacks %v lacks %d/%d", c.Mirror, c.Swaps, c.ByLacks, c.LacksA, c.LacksB)
	}
	if _, cp, ok := d.SkipTarget(dirB + "x.html"); !ok || cp != dirA+"x.html" {
		t.Errorf("after the swap SkipTarget(b) = %q %v", cp, ok)
	}
	if _, _, ok := d.SkipTarget(dirA + "x.html"); ok {
		t.Error("after the swap the new original is skipped")
	}
	if m, ok := d.CopyMapping(dirB + "x.html"); !ok || m.ToOrigin != "http://a" {
		t.Errorf("after the swap CopyMapping(b) = %+v %v", m, ok)
	}
	if _, ok := d.CopyMapping(dirA + "x.html"); ok {
		t.Error("after the swap CopyMapping maps the new original")
	}
	if cu, _, ok := d.CopyOf(dirA + "gone.html"); !ok || cu != dirB+"gone.html" {
		t.Errorf("after the swap CopyOf(a) = %q %v", cu, ok)
	}
}

// The demo's case: a decided mirror whose original lacks one page the mirror
// serves, and no lack seen on the mirror, is reversed at once.
func TestDirectionSwapOnOneLack(t *testing.T) {
	d, key := newDirCandidate(t, Options{})
	decide(t, d, key)
	if ev := d.Lack(key, SideB); ev != SwappedNow {
		t.Fatalf("the original lacks one page, the mirror none: %v, want SwappedNow", ev)
	}
	if mirrorSide(t, d, key) != SideB {
		t.Fatal("not reversed")
	}
}

// Whatever the order of the evidence, the direction cannot thrash: the
// swaps are at most 1 + log2 of the lacks' total weight, and once all lacks
// are in, a decided mirror's original does not lack more than twice its
// mirror's weight. Seeded (HORSESHOE_SEED).
func TestDirectionSwapsBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(testtools.Seed(t, "./mirror/"), 0))
	for trial := range 2000 {
		every := 2 + rng.IntN(30)
		d, key := newDirCandidate(t, Options{VerifyEvery: every})
		decideAt := rng.IntN(50)
		n := rng.IntN(400)
		pA := rng.Float64()
		for i := range n {
			if i == decideAt {
				decide(t, d, key)
			}
			s := SideB
			if rng.Float64() < pA {
				s = SideA
			}
			d.Lack(key, s)
		}
		c, _ := d.Candidate(key)
		if total := c.LackWeightA + c.LackWeightB; total > 0 {
			if bound := 1 + math.Log2(float64(total)); float64(c.Swaps) > bound {
				t.Fatalf("trial %d: %d swaps over a total weight %d (bound %.1f)", trial, c.Swaps, total, bound)
			}
		}
		if c.Decided && swapDue(&c) {
			t.Fatalf("trial %d: the original's weight %d is over twice the mirror's %d, not swapped", trial, c.lackWeight(1-c.Mirror), c.lackWeight(c.Mirror))
		}
	}
}
