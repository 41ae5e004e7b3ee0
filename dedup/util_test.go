package dedup

import (
	"fmt"
	"math/rand/v2"
)

// benchTokens returns n pseudo-random words from a 20,000-word vocabulary with
// English-like lengths.
func benchTokens(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]string, n)
	for i := range out {
		w := rng.IntN(20000)
		s := fmt.Sprintf("%08x%08x", w*2654435761%1000003, w)
		out[i] = s[:2+w%7]
	}
	return out
}
