package console

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// Profiles names the files StartProcess writes profiles to ("" for none).
type Profiles struct {
	CPU string // CPU profile of the whole run
	// Mem receives a heap profile at the end of the run (after a
	// collection, so in-use figures are the end's live data; the alloc_*
	// samples cover the whole run). Mem+".peak" receives one taken when
	// the live heap was largest, sampled every peakEvery.
	Mem string
}

// peakEvery is how often the live heap is sampled for the peak profile.
const peakEvery = 100 * time.Millisecond

// StartProcess sets up the crawl process: a soft memory limit unless
// GOMEMLIMIT says otherwise (Badger builds its tables on the Go heap; without
// a limit the heap runs at twice the live data), and the profiles p names,
// written until the returned stop is called.
func StartProcess(p Profiles) (stop func() error, err error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	if p.CPU != "" {
		f, err := os.Create(p.CPU)
		if err != nil {
			return nil, fmt.Errorf("cannot write CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot start CPU profile: %w", err)
		}
		stops = append(stops, func() error {
			pprof.StopCPUProfile()
			return f.Close()
		})
	}
	if p.Mem != "" {
		// Fail now rather than after the crawl.
		if err := writeHeapProfile(p.Mem); err != nil {
			stopAll()
			return nil, err
		}
		stopPeak := watchPeak(p.Mem + ".peak")
		stops = append(stops, func() error {
			err := stopPeak()
			runtime.GC()
			return errors.Join(err, writeHeapProfile(p.Mem))
		})
	}
	return stopAll, nil
}

// watchPeak writes a heap profile to path each time the live heap (as of
// the last collection) is a new maximum, at least an eighth above the last
// one written, until the returned stop is called.
func watchPeak(path string) (stop func() error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var written uint64
		tick := time.NewTicker(peakEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > written+written/8 {
				if err = writeHeapProfile(path); err != nil {
					return
				}
				written = live
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		return err
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("cannot write heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write heap profile: %w", err)
	}
	return nil
}
