//go:build unix

package testtools

import (
	"syscall"
	"time"
)

// ProcessCPU is this process's user plus system CPU time so far (0 if the
// system does not say): the CPU figure of benchmarks that measure a whole
// crawl or a client and its server in one process.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
