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

// The vector tag scan agrees with tagMatch on every entry it covers (the
// first 32 of each bucket), for tags with every marker position, empty
// buckets, buckets longer than 32 and a bucket ending at the end of tags.
func TestTagScanMatchesScalar(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	tags := make([]uint16, 5000)
	for i := range tags {
		marker := uint(rng.IntN(16))
		tags[i] = uint16(rng.Uint32())&^(1<<marker-1)<<0 | 1<<marker
		tags[i] &^= 1<<marker - 1
	}
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(20)
		lo, hi := make([]uint32, n), make([]uint32, n)
		q := make([]uint16, n)
		for i := range n {
			size := rng.IntN(70)
			switch rng.IntN(6) {
			case 0:
				size = rng.IntN(3)
			case 1:
				size = 250 + rng.IntN(300) // past 255: the length must not wrap
			}
			start := rng.IntN(len(tags) - size + 1)
			if i == 0 && round%10 == 0 {
				start = len(tags) - size
			}
			lo[i], hi[i] = uint32(start), uint32(start+size)
			q[i] = uint16(rng.Uint32())
			if size > 0 && rng.IntN(2) == 0 {
				// A query agreeing with one entry on its known bits.
				e := tags[start+rng.IntN(size)]
				q[i] = e ^ uint16(rng.Uint32())&(e&-e-1)
			}
		}
		out := make([]uint32, n)
		if hostKernels.tagScan == nil {
			t.Skip("no AVX-512 tag scan on this CPU")
		}
		if !hostKernels.tagScan(tags, lo, hi, q, out) {
			t.Fatal("tag scan did not run")
		}
		for i := range n {
			var want uint32
			for j := 0; j < 32 && lo[i]+uint32(j) < hi[i]; j++ {
				if tagMatch(tags[lo[i]+uint32(j)], q[i]) {
					want |= 1 << j
				}
			}
			if out[i] != want {
				t.Fatalf("round %d bucket %d [%d:%d]: mask %032b, scalar %032b", round, i, lo[i], hi[i], out[i], want)
			}
		}
	}
}
