package crawl

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// BenchmarkSettle measures one exact settlement as the commit makes it: read
// the candidate's stored text, tokenize it, shingle both pages and compute
// the exact Jaccard (the new page's shingles are computed once per page, and
// are included here). Texts of 500, 2,000 and 20,000 words, a copy with 1%
// of the words replaced.
func BenchmarkSettle(b *testing.B) {
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	e := New(Options{Parse: parse.Options{MaxTokens: 1 << 20}}, db, nil, nil, nil, det, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, n := range []int{500, 2000, 20000} {
		words := make([]string, n)
		for j := range words {
			words[j] = strconv.FormatUint(rng.Uint64()>>40, 36)
		}
		text := strings.Join(words, " ")
		id := uint64(i + 1)
		if err := db.Update(func(tx *storage.Tx) error { return tx.PutText(id, text) }); err != nil {
			b.Fatal(err)
		}
		tokens := parse.Tokenize(nil, text)
		for j := 0; j < n; j += 100 {
			tokens[j] = "changed"
		}
		b.Run(fmt.Sprintf("words=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				j, ok := e.settler(tokens)(id)
				if !ok || j < 0.9 || j > 0.96 {
					b.Fatalf("settled J = %g, %v", j, ok)
				}
			}
		})
	}
}
