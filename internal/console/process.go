package console

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// StartProcess sets up the crawl process: a soft memory limit unless
// GOMEMLIMIT says otherwise (Badger builds its tables on the Go heap; without
// a limit the heap runs at twice the live data), and a CPU profile written to
// cpuProfile ("" for none) until the returned stop is called.
func StartProcess(cpuProfile string) (stop func(), err error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
	if cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("cannot write CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot start CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
