//go:build !unix

package testtools

import "time"

// ProcessCPU is unknown here: 0 (see processcpu_unix.go).
func ProcessCPU() time.Duration { return 0 }
