package testtools

import (
	"runtime"
	"testing"
	"time"
)

// OwnCPU counts the work f does, not the time it waits.
func TestOwnCPU(t *testing.T) {
	cpu, wall := OwnCPU(func() { time.Sleep(200 * time.Millisecond) })
	if wall < 200*time.Millisecond {
		t.Fatalf("wall %v for a 200ms sleep", wall)
	}
	if runtime.GOOS == "linux" && cpu > 100*time.Millisecond {
		t.Errorf("a 200ms sleep cost %v of CPU", cpu)
	}
	x := 0
	cpu, _ = OwnCPU(func() {
		for i := 0; i < 200_000_000; i++ {
			x += i ^ x>>3
		}
	})
	if cpu <= 0 {
		t.Errorf("a busy loop cost %v of CPU (%d)", cpu, x)
	}
}
