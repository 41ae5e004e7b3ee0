package export

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMainText: extracting the main text of the two pages that
// parse's BenchmarkParse parses (a git manual page and a Flink page), for
// the cost of extraction beside the crawl's own parse of a page.
func BenchmarkMainText(b *testing.B) {
	for _, file := range []string{"git-gitdiffcore.html", "flink-zh-what-is-flink-ml.html"} {
		b.Run(file, func(b *testing.B) {
			body, err := os.ReadFile(filepath.Join("..", "parse", "testdata", file))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if text, err := MainText(body, "http://127.0.0.5/v2.55/"+file); err != nil || text == "" {
					b.Fatalf("%q, %v", text, err)
				}
			}
		})
	}
}
