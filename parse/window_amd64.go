//go:build amd64 && !purego

package parse

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasWindowAVX2 reports whether windowAVX2 can run.
var hasWindowAVX2 = cpu.X86.HasAVX2

//go:noescape
func windowAVX2(p *byte) (tok, up, hi uint64)

// window classifies the 64 bytes of text from i (bytes past the end read as
// delimiters): bit k of tok is set when text[i+k] is an ASCII letter or digit,
// of up when it is an upper-case ASCII letter, of hi when it is >= 0x80.
func window(text string, i int) (tok, up, hi uint64) {
	if !hasWindowAVX2 || len(text)-i < 64 {
		return windowSWAR(text, i)
	}
	return windowAVX2((*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(text)), i)))
}
