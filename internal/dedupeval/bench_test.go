package dedupeval

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// goldenPages are parse's golden pages the benchmarks below time: an
// English manual page and a Chinese one.
var goldenPages = []string{"git-gitdiffcore.html", "flink-zh-what-is-flink-ml.html"}

// goldenText returns the visible text of one of parse's golden pages.
func goldenText(b *testing.B, file string) string {
	b.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "parse", "testdata", file))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.5/" + file)
	doc, err := parse.Parse(body, u, parse.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return doc.Text
}

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
	for _, file := range goldenPages {
		b.Run(file, func(b *testing.B) {
			text := goldenText(b, file)
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
	for _, file := range goldenPages {
		text := goldenText(b, file)
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

// BenchmarkNormalizeAndShingleCorpus: BenchmarkNormalizeAndShingle over the
// visible text of a quarter of the real corpus (every fourth HTML file in
// path order: English, Chinese, Korean, French and other documentation
// pages, short and long, decoded to UTF-8 as the crawl decodes them), all of
// it per iteration; MB/s of visible text.
func BenchmarkNormalizeAndShingleCorpus(b *testing.B) {
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	var texts []string
	total, words := 0, 0
	forEachCorpusPage(b, 4, parse.Options{}, func(_ string, doc *parse.Document) {
		texts = append(texts, doc.Text)
		total += len(doc.Text)
		words += len(doc.Tokens)
	})
	if len(texts) < 1000 {
		b.Fatalf("%d corpus pages, want at least 1,000", len(texts))
	}
	toks := make([]string, 0, 1<<16)
	shingles := make([]uint64, 0, 1<<16)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range texts {
			toks = parse.Tokenize(toks[:0], text)
			shingles = det.Shingles(toks, shingles[:0])
		}
	}
	b.ReportMetric(float64(len(texts)), "pages")
	b.ReportMetric(float64(words), "words")
}
