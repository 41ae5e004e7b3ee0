package dedup

import "testing"

// TestSettlementDecide: the settlement rule every index applies
// (Settlement.Decide: the Detector here, the Redis backend's index through
// the same function), case by case.
func TestSettlementDecide(t *testing.T) {
	const n, floor, thr = 84, 60, 0.90
	exact := func(js map[uint64]float64) Settler {
		return func(id uint64) (float64, bool) {
			j, ok := js[id]
			return j, ok
		}
	}
	cases := []struct {
		name   string
		settle Settler
		cands  []Ranked
		want   uint64 // 0: no near duplicate
		wantJ  float64
	}{
		{"a pair a hair below the threshold's double is near (a ratio of integers)", exact(map[uint64]float64{5: thr - 1e-13}), []Ranked{{70, 5}}, 5, thr - 1e-13},
		{"below the threshold is kept", exact(map[uint64]float64{5: 0.899}), []Ranked{{84, 5}}, 0, 0},
		{"the best estimate first, then the next", exact(map[uint64]float64{1: 0.80, 2: 0.95}), []Ranked{{70, 2}, {80, 1}}, 2, 0.95},
		{"ties go to the smaller id", exact(map[uint64]float64{3: 0.95, 9: 0.97}), []Ranked{{75, 9}, {75, 3}}, 3, 0.95},
		{"below the floor is never settled", exact(map[uint64]float64{4: 1}), []Ranked{{floor - 1, 4}}, 0, 0},
		{"at most MaxSettle settlements", exact(map[uint64]float64{1: 0.5, 2: 0.5, 3: 0.5, 4: 0.99}), []Ranked{{80, 1}, {79, 2}, {78, 3}, {77, 4}}, 0, 0},
		{"an unreadable candidate falls back to its estimate", exact(map[uint64]float64{}), []Ranked{{76, 6}}, 6, 76.0 / n},
		{"an unreadable candidate below the threshold by estimate is kept", exact(map[uint64]float64{}), []Ranked{{75, 6}}, 0, 0},
		{"no settler: the best estimate decides", nil, []Ranked{{70, 1}, {76, 2}}, 2, 76.0 / n},
		{"no settler: below the threshold is kept", nil, []Ranked{{75, 1}}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := Settlement{Settle: c.settle}
			d, ok := st.Decide(c.cands, n, floor, thr, MethodSupershingle)
			if c.want == 0 {
				if ok {
					t.Fatalf("near duplicate of %d (J %v), want none", d.Original, d.Similarity)
				}
				return
			}
			if !ok || d.Original != c.want || d.Similarity != c.wantJ || d.Class != Near {
				t.Fatalf("got %v of %d (J %v, ok %v), want near of %d (J %v)", d.Class, d.Original, d.Similarity, ok, c.want, c.wantJ)
			}
			// Settled: the exact Jaccard decided, not the estimate.
			readable := false
			if c.settle != nil {
				_, readable = c.settle(c.want)
			}
			if d.Settled != readable {
				t.Errorf("Settled = %v, want %v", d.Settled, readable)
			}
		})
	}
	// Batches of one page share the budget, and a candidate met again is
	// not settled again.
	calls := map[uint64]int{}
	st := Settlement{Settle: func(id uint64) (float64, bool) { calls[id]++; return 0.5, true }}
	st.Decide([]Ranked{{80, 1}, {80, 2}}, n, floor, thr, MethodSupershingle)
	st.Decide([]Ranked{{80, 2}, {80, 3}, {80, 4}}, n, floor, thr, MethodSimhash)
	if calls[1] != 1 || calls[2] != 1 || calls[3] != 1 || calls[4] != 0 {
		t.Errorf("settlements per candidate over two batches: %v, want 1, 2 and 3 once each and 4 never (MaxSettle %d)", calls, MaxSettle)
	}
}
