package dedup

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSuperTagMatch(t *testing.T) {
	t.Parallel()
	key := uint64(0xdeadbeefcafef00d)
	tests := []struct {
		name  string
		e, q  uint16
		match bool
	}{
		{"fresh equal", superTag(key, 20), superTag(key, 20), true},
		{"fresh differs in last key bit", superTag(key, 20) ^ 2, superTag(key, 20), false},
		{"shifted by 3 keeps 12 bits", superTag(key, 17) << 3, superTag(key, 20), true},
		{"shifted by 3, lost bits ignored", superTag(key, 17) << 3, superTag(key^(1<<(64-20-15)), 20), true},
		{"shifted by 3, kept bit differs", superTag(key, 17) << 3, superTag(key^(1<<(64-20-1)), 20), false},
		{"delta tag at t=25 keeps 7 bits", deltaTag(key&^0xffffffff|7, 25), superTag(key, 25), true},
		{"delta tag at t=25 ignores bits below 32", deltaTag(key&^0xffffffff, 25), superTag(key^(1<<31), 25), true},
		{"delta tag at t=25, known bit differs", deltaTag(key&^0xffffffff, 25), superTag(key^(1<<32), 25), false},
		{"delta tag at t=12 is the full tag", deltaTag(key&^0xffffffff|5, 12), superTag(key, 12), true},
	}
	for _, tc := range tests {
		if got := tagMatch(tc.e, tc.q); got != tc.match {
			t.Errorf("%s: tagMatch(%#04x, %#04x) = %v, want %v", tc.name, tc.e, tc.q, got, tc.match)
		}
	}
	if deltaTag(key&^0xffffffff, 12) != superTag(key, 12) {
		t.Errorf("delta tag with 15 known bits differs from the key's tag")
	}
}

// TestSuperIndexAgainstMap inserts keys through many merges (the header width
// grows from minSuperT) and checks that every inserted (key, slot) is found,
// that nothing else is returned except rare tag collisions, and the memory.
func TestSuperIndexAgainstMap(t *testing.T) {
	t.Parallel()
	n := 600_000
	if testing.Short() || raceEnabled {
		n = 100_000
	}
	rng := rand.New(rand.NewPCG(9, 10))
	s := newSuperIndex()
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
		if i%7 == 3 { // repeated keys (pages sharing a supershingle pair)
			keys[i] = keys[rng.IntN(i)]
		}
		s.insert(keys[i], uint32(i))
	}
	if s.len() != n {
		t.Fatalf("len %d, want %d", s.len(), n)
	}
	if s.t <= minSuperT {
		t.Fatalf("header width %d never grew", s.t)
	}
	want := map[uint64][]uint32{}
	for i, k := range keys {
		want[k] = append(want[k], uint32(i))
	}
	extra := 0
	var got []uint32
	for probe := 0; probe < 20_000; probe++ {
		k := keys[rng.IntN(n)]
		got = got[:0]
		s.lookup(k, func(slot uint32) bool { got = append(got, slot); return true })
		for _, w := range want[k] {
			if !slices.Contains(got, w) {
				t.Fatalf("key %#x: slot %d not found (got %v)", k, w, got)
			}
		}
		for _, g := range got {
			if keys[g] != k {
				extra++
			}
		}
	}
	// Tags keep at least 15 key bits below the header for entries merged
	// since the last growth: about 8-16 entries per bucket, so well under
	// 0.01 false hits per lookup.
	if rate := float64(extra) / 20_000; rate > 0.01 {
		t.Errorf("%.4f false hits per lookup, want < 0.01", rate)
	}
	// Random keys: about 0 hits.
	miss := 0
	for range 20_000 {
		s.lookup(rng.Uint64(), func(uint32) bool { miss++; return true })
	}
	if rate := float64(miss) / 20_000; rate > 0.01 {
		t.Errorf("%.4f hits per random lookup, want < 0.01", rate)
	}
	if bpe := float64(s.memoryBytes()) / float64(n); bpe > 7.5 {
		t.Errorf("%.2f bytes per entry, want <= 7.5", bpe)
	}
	// Early stop.
	calls := 0
	k := keys[3]
	s.insert(k, uint32(n))
	s.insert(k, uint32(n+1))
	if s.lookup(k, func(uint32) bool { calls++; return false }) || calls != 1 {
		t.Errorf("lookup did not stop after fn returned false (%d calls)", calls)
	}
}
