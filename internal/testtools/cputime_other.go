//go:build !linux

package testtools

import "time"

// OwnCPU runs f and returns its wall time twice: only Linux reports a
// thread's CPU time (see cputime_linux.go).
func OwnCPU(f func()) (cpu, wall time.Duration) {
	start := time.Now()
	f()
	wall = time.Since(start)
	return wall, wall
}
