//go:build linux

package dedup

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestTokenWordsPageEdge: the token word loader reads whole 8-byte words but
// never past the page a token ends on. Tokens of every length up to 20 are
// placed so that they end exactly at the end of a page whose next page is
// unmapped (PROT_NONE), and start at every offset near a page start; the
// fingerprints must equal the table code's (and nothing may fault).
func TestTokenWordsPageEdge(t *testing.T) {
	t.Parallel()
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[2*page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	for i := page; i < 2*page; i++ {
		mem[i] = 'a' + byte(i%26)
	}
	str := func(off, n int) string { return unsafe.String(&mem[off], n) }
	d := newTestDetector(t, nil)
	var tokens []string
	for n := 1; n <= 20; n++ {
		tokens = append(tokens, str(2*page-n, n)) // ends at the unmapped page
		tokens = append(tokens, str(page, n))     // starts at the page after an unmapped one
		tokens = append(tokens, str(page+3, n))
	}
	for round := 0; round < 3; round++ { // whole blocks of eight and tails
		tokens = append(tokens, tokens[:len(tokens)/2+round]...)
		u := make([]uint64, len(tokens)+d.sg.w-1)
		out := make([]uint64, len(tokens))
		var stream []byte
		exact := d.sg.fingerprint(tokens, u, out, make([]uint8, len(tokens)), &stream)
		u2 := make([]uint64, len(tokens)+d.sg.w-1)
		if want := d.sg.tokens(tokens, u2); exact != want {
			t.Fatalf("exact %#x, table %#x", exact, want)
		}
		for i := range tokens {
			if u[i] != u2[i] {
				t.Fatalf("token %d (%q): %#x, table %#x", i, tokens[i], u[i], u2[i])
			}
		}
	}
}
