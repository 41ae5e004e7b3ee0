package dedup

import (
	"bufio"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// smapsHuge returns the AnonHugePages (kB) of the mapping holding addr.
func smapsHuge(t *testing.T, addr uintptr) (kb int, found bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &kb)
			return kb, true
		}
	}
	return 0, false
}

// TestMakeBigHugePages: a large array is zeroed, 2 MiB aligned, backed by huge
// pages where THP is not off, and unmapped by free.
func TestMakeBigHugePages(t *testing.T) {
	owner := new(int)
	live := bigMemLive.Load()
	a, mem := makeBig[uint64](owner, 8<<20) // 64 MiB
	if mem.p == nil {
		t.Fatal("a 64 MiB array came from the heap")
	}
	if bigMemLive.Load() != live+1 {
		t.Fatalf("live mappings %d, want %d", bigMemLive.Load(), live+1)
	}
	p := uintptr(unsafe.Pointer(&a[0]))
	if p%hugePage != 0 {
		t.Errorf("array at %#x, not 2 MiB aligned", p)
	}
	for i := range a {
		if a[i] != 0 {
			t.Fatalf("a[%d] = %d, not zeroed", i, a[i])
		}
		a[i] = uint64(i)
	}
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	kb, found := smapsHuge(t, p)
	if !found {
		t.Fatal("the array's mapping is not in /proc/self/smaps")
	}
	if strings.Contains(string(thp), "[never]") || len(thp) == 0 {
		t.Logf("THP off (%q): %d kB huge", strings.TrimSpace(string(thp)), kb)
	} else if kb < 32<<10 {
		// The kernel may lack free huge pages; it should find half of them.
		t.Errorf("%d kB of 64 MiB in huge pages (THP %q)", kb, strings.TrimSpace(string(thp)))
	}
	mem.free()
	mem.free() // twice is harmless
	if bigMemLive.Load() != live {
		t.Fatalf("live mappings %d after free, want %d", bigMemLive.Load(), live)
	}
	runtime.KeepAlive(owner)

	small, mem := makeBig[uint32](owner, 1000)
	if mem.p != nil || len(small) != 1000 {
		t.Errorf("a 4 kB array was mapped (len %d)", len(small))
	}
}

// TestMakeBigOwnerCollected: an array's mapping goes when its owner does.
func TestMakeBigOwnerCollected(t *testing.T) {
	live := bigMemLive.Load()
	func() {
		owner := new([16]byte)
		a, _ := makeBig[uint32](owner, 4<<20)
		a[len(a)-1] = 1
		runtime.KeepAlive(owner) // the array is used up to here
	}()
	deadline := time.Now().Add(10 * time.Second)
	for bigMemLive.Load() > live {
		if time.Now().After(deadline) {
			t.Fatalf("live mappings %d, want %d: the owner's cleanup did not unmap", bigMemLive.Load(), live)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPSMLargeIndexMapped: an index large enough for mapped arrays merges
// (replacing and unmapping them) and still finds every stored fingerprint
// within distance 3, and holds exactly three mappings (fingerprints, slots,
// and the offset table of 2^19+1 entries).
func TestPSMLargeIndexMapped(t *testing.T) {
	if testing.Short() {
		t.Skip("2 M fingerprints")
	}
	live := bigMemLive.Load()
	p := NewPSM(1<<12, DefaultPSMSigma) // budget covers every header within distance 3
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 2 << 20
	fps := make([]uint64, n)
	for i := range fps {
		fps[i] = rng.Uint64()
		p.Add(fps[i], uint32(i))
	}
	p.idx.merge()
	if got := bigMemLive.Load() - live; got != 3 {
		t.Errorf("%d mappings live for one index, want 3 (fingerprints, slots, offsets)", got)
	}
	for q := 0; q < 200; q++ {
		i := rng.IntN(n)
		fp := fps[i]
		for range rng.IntN(4) {
			fp ^= 1 << rng.IntN(64)
		}
		found := false
		p.Search(fp, nil, 3, func(s uint32) bool {
			if bits.OnesCount64(fps[s]^fp) > 3 {
				t.Fatalf("slot %d at distance %d", s, bits.OnesCount64(fps[s]^fp))
			}
			found = found || s == uint32(i)
			return true
		})
		if !found {
			t.Fatalf("query %d: stored fingerprint %d not found", q, i)
		}
	}
	runtime.KeepAlive(p)
}
