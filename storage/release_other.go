//go:build !linux

package storage

import "log/slog"

// mappedRelease: no release on this platform (see releaser).
func mappedRelease(string, *slog.Logger) func() { return nil }
