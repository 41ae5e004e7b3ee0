//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package storage

// lockDir does nothing here: Badger's own lock, taken when it opens the
// store, is the only one (see lock_unix.go).
func lockDir(dir string, readOnly bool) (unlock func(), err error) { return func() {}, nil }
