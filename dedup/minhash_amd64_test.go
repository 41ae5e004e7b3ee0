//go:build amd64 && !purego

package dedup

import (
	"testing"
	"unsafe"
)

// The kernel addresses mhState by the offsets written into minhash_amd64.s.
func TestMinhashStateLayout(t *testing.T) {
	t.Parallel()
	var st mhState
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"seed", unsafe.Offsetof(st.seed), 0},
		{"mul", unsafe.Offsetof(st.mul), 128},
		{"valid", unsafe.Offsetof(st.valid), 256},
		{"ts", unsafe.Offsetof(st.ts), 272},
		{"mins", unsafe.Offsetof(st.mins), 1296},
		{"cand", unsafe.Offsetof(st.cand), 1424},
		{"tail", unsafe.Offsetof(st.tail), 2448},
	} {
		if c.got != c.want {
			t.Errorf("mhState.%s at offset %d, the kernel expects %d", c.name, c.got, c.want)
		}
	}
}
