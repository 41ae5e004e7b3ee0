//go:build !amd64 || purego

package dedup

const hasShingleVector = false

func (sg *signer) shinglesFast(u, out []uint64) int { return 0 }

const useShingleVector = false

func (sg *signer) tokensFast(u []uint64, l []uint8) int { return 0 }

func (sg *signer) foldFast(stream []byte) (uint64, int) { return 0, 0 }

func tokenWords(tokens []string, u []uint64, lens []uint8, buf []byte, pos int) (done, end int) {
	return 0, pos
}
