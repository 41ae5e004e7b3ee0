package dedupeval

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// BenchmarkNormalizeAndShingle: issue 3's "normalize and shingle at least 300
// MB/s of text, HTML parsing excluded", measured as one step on the visible
// text of real pages (parse's golden pages: an English manual page and a
// Chinese one): parse.Tokenize (case folding, NFKC, delimiter runs as one)
// then the looped 5-word shingle fingerprints (dedup.Detector.Shingles,
// which includes the token fingerprints and the exact fingerprint of the
// stream). MB/s counts bytes of visible text.
func BenchmarkNormalizeAndShingle(b *testing.B) {
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	for _, file := range []string{"git-gitdiffcore.html", "flink-zh-what-is-flink-ml.html"} {
		b.Run(file, func(b *testing.B) {
			body, err := os.ReadFile(filepath.Join("..", "..", "parse", "testdata", file))
			if err != nil {
				b.Fatal(err)
			}
			u, _ := url.Parse("http://127.0.0.5/" + file)
			doc, err := parse.Parse(body, u, parse.Options{})
			if err != nil {
				b.Fatal(err)
			}
			text := doc.Text
			toks := make([]string, 0, len(text)/4)
			shingles := make([]uint64, 0, len(text)/4)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				toks = parse.Tokenize(toks[:0], text)
				shingles = det.Shingles(toks, shingles[:0])
			}
			b.ReportMetric(float64(len(toks)), "words")
		})
	}
}

// BenchmarkNormalizeAndShingleStages times the two steps of
// BenchmarkNormalizeAndShingle apart, on the same pages (MB/s of visible text).
func BenchmarkNormalizeAndShingleStages(b *testing.B) {
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	for _, file := range []string{"git-gitdiffcore.html", "flink-zh-what-is-flink-ml.html"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "parse", "testdata", file))
		if err != nil {
			b.Fatal(err)
		}
		u, _ := url.Parse("http://127.0.0.5/" + file)
		doc, err := parse.Parse(body, u, parse.Options{})
		if err != nil {
			b.Fatal(err)
		}
		text := doc.Text
		toks := parse.Tokenize(nil, text)
		b.Run("tokenize/"+file, func(b *testing.B) {
			dst := make([]string, 0, len(toks))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				dst = parse.Tokenize(dst[:0], text)
			}
		})
		b.Run("shingle/"+file, func(b *testing.B) {
			shingles := make([]uint64, 0, len(toks))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				shingles = det.Shingles(toks, shingles[:0])
			}
		})
	}
}
