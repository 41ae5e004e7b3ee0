//go:build !amd64 || purego

package dedup

func prefetch(addr uintptr) {}

func prefetch2(a, b uintptr) {}
