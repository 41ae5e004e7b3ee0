//go:build !amd64 || purego

package dedup

func rankKeys(keys *[32]uint16, n int, rank *[32]uint8) bool { return false }

func prefetch(addr uintptr) {}
