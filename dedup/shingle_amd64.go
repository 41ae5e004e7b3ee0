//go:build amd64 && !purego

package dedup

//go:noescape
func tokenWordsAsm(toks *string, n int, u *uint64, lens *uint8, buf *byte, bufLen, pos int) (done, end int)

//go:noescape
func foldAVX512(p *byte, blocks int, k *[18]uint64) uint64

//go:noescape
func tokensAVX512(u *uint64, l *uint8, blocks int, k *[10]uint64)

//go:noescape
func shinglesAVX512(u *uint64, out *uint64, blocks int, pow *uint64, w int, k *[3]uint64)

// shinglesFast computes the shingles of out that come in whole blocks of
// eight (out[i] for i < 8*(len(out)/8), as shingles does) and returns how
// many (kernels.shingles).
func (sg *signer) shinglesFast(u, out []uint64) int {
	blocks := len(out) / 8
	if blocks == 0 {
		return 0
	}
	_ = u[8*blocks+sg.w-2] // the kernel reads u[8*blocks+w-2] at most
	shinglesAVX512(&u[0], &out[0], blocks, &sg.pow[0], sg.w, &sg.clk)
	return 8 * blocks
}

// tokensFast finishes the token fingerprints that come in whole blocks of
// eight (u[i] = u[i] * x^(8*l[i]) mod p, l[i] = 0 meaning 8) and returns how
// many (kernels.tokens).
func (sg *signer) tokensFast(u []uint64, l []uint8) int {
	blocks := min(len(u), len(l)) / 8
	if blocks == 0 {
		return 0
	}
	tokensAVX512(&u[0], &l[0], blocks, &sg.tk)
	return 8 * blocks
}

// foldFast returns the fingerprint (from 0) of the whole 64-byte blocks of
// stream and how many bytes they are (kernels.fold).
func (sg *signer) foldFast(stream []byte) (uint64, int) {
	blocks := len(stream) / 64
	if blocks == 0 {
		return 0, 0
	}
	return foldAVX512(&stream[0], blocks, &sg.fk), 64 * blocks
}

// tokenWords runs tokenWordsAsm over tokens (see there): the stream copy and
// each token's last word, as many tokens as buf[pos:] has room for.
func tokenWords(tokens []string, u []uint64, lens []uint8, buf []byte, pos int) (done, end int) {
	if len(tokens) == 0 || len(buf) == 0 {
		return 0, pos
	}
	_, _ = u[len(tokens)-1], lens[len(tokens)-1]
	return tokenWordsAsm(&tokens[0], len(tokens), &u[0], &lens[0], &buf[0], len(buf), pos)
}
