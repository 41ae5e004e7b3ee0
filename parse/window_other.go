//go:build !amd64 || purego

package parse

// window classifies the 64 bytes of text from i (bytes past the end read as
// delimiters): bit k of tok is set when text[i+k] is an ASCII letter or digit,
// of up when it is an upper-case ASCII letter, of hi when it is >= 0x80.
func window(text string, i int) (tok, up, hi uint64) { return windowSWAR(text, i) }
