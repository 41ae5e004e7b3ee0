//go:build amd64 && !purego

package dedup

import "testing"

func setShingleVector(t testing.TB, on bool) {
	t.Helper()
	useShingleVector = on
	t.Cleanup(func() { useShingleVector = true })
}
