//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the lock Badger takes on a data dir (acquireDirectoryLock
// in Badger's dir_unix.go: flock on the directory, exclusive to write,
// shared to read), without waiting. Open holds it while Check reads the
// files, so that a crawl writing (a compaction rewriting tables, a value log
// growing) is reported as ErrLocked and never read as damage. The returned
// function releases it; Badger then takes its own (on another descriptor,
// which an exclusive lock of ours would block).
func lockDir(dir string, readOnly bool) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot open data dir: %w", err)
	}
	how := syscall.LOCK_EX | syscall.LOCK_NB
	if readOnly {
		how = syscall.LOCK_SH | syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("cannot lock data dir %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
