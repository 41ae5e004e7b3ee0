package testtools

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is RUSAGE_THREAD (Linux 2.6.26 on): the calling thread's
// resource use.
const rusageThread = 1

// OwnCPU runs f on one OS thread and returns the CPU time that thread spent
// in it (user and system), and the wall time. The CPU time is f's own work:
// it does not grow when other processes or tests share the cores, as wall
// time does (the Go runtime's background work, such as the garbage
// collector's marking threads, is on other threads and left out; assists f
// makes while allocating are counted). A bound on it is a bound on the work,
// which is what a test of "linear, not worse" means; the wall time is only
// for a hang bound, generous enough that no load reaches it.
func OwnCPU(f func()) (cpu, wall time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := threadCPU()
	start := time.Now()
	f()
	wall = time.Since(start)
	after, ok2 := threadCPU()
	if !ok || !ok2 {
		return wall, wall
	}
	return after - before, wall
}

func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
