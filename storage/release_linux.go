package storage

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// mappedRelease returns the release of a writable store in dir (see
// releaser): MADV_PAGEOUT over each mapping of its value logs, tables and write-ahead logs.
// The advice never changes what a mapping reads, whatever it maps by the
// time it is given (a file Badger unmapped in between, even memory mapped
// again at that address since), so the list read from /proc/self/maps may
// be stale. A kernel without MADV_PAGEOUT (before Linux 5.4) is told once,
// and the release stops there.
func mappedRelease(dir string, logger *slog.Logger) func() {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil
	}
	var off atomic.Bool
	return func() {
		if off.Load() {
			return
		}
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			return
		}
		for _, r := range storeMappings(maps, abs) {
			_, _, e := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_PAGEOUT)
			if errors.Is(e, syscall.EINVAL) {
				logger.Debug("the kernel does not take MADV_PAGEOUT: the store's mapped pages stay resident until the kernel drops them")
				off.Store(true)
				return
			}
		}
	}
}
