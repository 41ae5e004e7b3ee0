//go:build !unix

package storage

import (
	"errors"
	"runtime"
)

// freeBytes cannot tell the free space here; the crawl is then not stopped
// for it (checkSpace treats an error as unknown).
func freeBytes(dir string) (int64, error) {
	return 0, errors.New("storage: free space unknown on " + runtime.GOOS)
}
