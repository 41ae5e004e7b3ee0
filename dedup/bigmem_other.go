//go:build !linux

package dedup

import "sync/atomic"

// bigMem is empty where arrays are not mapped on their own (see
// bigmem_linux.go): they come from the Go heap.
type bigMem struct{}

var bigMemLive atomic.Int64

func makeBig[T uint16 | uint32 | uint64, O any](owner *O, n int) ([]T, bigMem) {
	return make([]T, n), bigMem{}
}

func (b *bigMem) free() {}
