package dedup

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bigMem is the anonymous mapping behind one large index array (the sorted
// fingerprints, slots, tags and offset tables), advised for transparent huge
// pages. A lookup in a 10 M index reads a few random lines of 130 MB: with
// 4 KiB pages nearly every one also misses the TLB and walks the page tables,
// with 2 MiB pages the whole index fits the TLB. Go's heap gives no huge pages
// on systems where THP is "madvise" (the common default), so these arrays
// come from mmap. The mapping is unmapped by free, when a merge replaces the
// array, or when its owner is collected. Nothing may keep a slice of the
// array past either: readers use the owner after their last read (so it stays
// reachable), and no insert (merge) may run while a reader is inside a bucket
// (the simhash indexes panic on an Add from a Search). The memory is not Go
// heap: GOGC and GOMEMLIMIT do not see it (MemoryBytes does), and the race
// detector does not watch it.
type bigMem struct {
	p    unsafe.Pointer // nil: the array is on the Go heap
	n    uintptr
	stop runtime.Cleanup
}

const (
	// bigMemMin is the smallest array mapped on its own: smaller ones hold
	// no whole huge page.
	bigMemMin = 2 << 20
	hugePage  = 2 << 20 // x86-64 and arm64 with 4 KiB pages
)

var pageSize = uintptr(unix.Getpagesize())

// bigMemLive counts the mappings not yet unmapped (tests check for leaks).
var bigMemLive atomic.Int64

// makeBig returns n zeroed elements: in a mapping of their own, owned by
// owner, when they take bigMemMin bytes or more and the mapping succeeds; from
// the Go heap otherwise (then the bigMem is empty). The mapping starts on a
// huge page boundary and ends with the array (rounded to a page), so only the
// huge pages the array fills are huge and nothing past it is held.
func makeBig[T uint16 | uint32 | uint64, O any](owner *O, n int) ([]T, bigMem) {
	var z T
	size := uintptr(n) * unsafe.Sizeof(z)
	if size < bigMemMin {
		return make([]T, n), bigMem{}
	}
	length := (size + pageSize - 1) &^ (pageSize - 1)
	reserve := length + hugePage // room to align
	p, err := unix.MmapPtr(-1, 0, nil, reserve, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]T, n), bigMem{}
	}
	head := -uintptr(p) & (hugePage - 1)
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	_ = unix.MunmapPtr(unsafe.Add(p, head+length), reserve-head-length)
	p = unsafe.Add(p, head)
	// A hint: where THP is off the pages are ordinary ones.
	_ = unix.Madvise(unsafe.Slice((*byte)(p), length), unix.MADV_HUGEPAGE)
	bigMemLive.Add(1)
	m := bigMem{p: p, n: length}
	m.stop = runtime.AddCleanup(owner, func(m bigMem) { m.unmap() }, m)
	return unsafe.Slice((*T)(p), n), m
}

func (b bigMem) unmap() {
	if unix.MunmapPtr(b.p, b.n) == nil {
		bigMemLive.Add(-1)
	}
}

// free unmaps the array now; its slices must not be used after.
func (b *bigMem) free() {
	if b.p == nil {
		return
	}
	b.stop.Stop()
	b.unmap()
	*b = bigMem{}
}
