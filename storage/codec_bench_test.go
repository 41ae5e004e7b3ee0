package storage_test

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// corpusValues returns what the store keeps of the corpus's pages: each
// page's raw response (a plain header, then the file) and its visible text.
// The benchmark is skipped without the corpus.
func corpusValues(b *testing.B) [][]byte {
	b.Helper()
	root, _, err := testweb.Corpus()
	if err != nil {
		b.Skip("no corpus:", err)
	}
	var vals [][]byte
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return nil // a dangling link
		}
		rel, _ := filepath.Rel(root, p)
		u, _ := url.Parse("http://" + filepath.ToSlash(rel))
		doc, err := parse.Parse(body, u, parse.Options{})
		if err != nil {
			return err
		}
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n"
		vals = append(vals, append([]byte(resp), body...), []byte(doc.Text))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return vals
}

// BenchmarkCompressLevel compresses the corpus's raw responses and texts one
// by one at each zstd level, as the store does (codec.go): ns/op is one pass
// over the corpus, stored/raw the share of the bytes that stays. The choice
// of compressLevel rests on it (BENCHMARKS.md, "Issue 30: the store per page").
//
//	go test ./storage -run '^$' -bench CompressLevel -count 5
func BenchmarkCompressLevel(b *testing.B) {
	vals := corpusValues(b)
	var raw int
	for _, v := range vals {
		raw += len(v)
	}
	for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		b.Run(lvl.String(), func(b *testing.B) {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
			if err != nil {
				b.Fatal(err)
			}
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(raw))
			var stored int
			var buf []byte
			b.Run("encode", func(b *testing.B) {
				b.SetBytes(int64(raw))
				for range b.N {
					stored = 0
					for _, v := range vals {
						buf = enc.EncodeAll(v, buf[:0])
						stored += 1 + len(buf)
					}
				}
				b.ReportMetric(float64(stored)/float64(raw), "stored/raw")
				b.ReportMetric(float64(stored)/float64(len(vals)/2), "B/page")
			})
			frames := make([][]byte, len(vals))
			for i, v := range vals {
				frames[i] = enc.EncodeAll(v, nil)
			}
			b.Run("decode", func(b *testing.B) {
				b.SetBytes(int64(raw))
				for range b.N {
					for _, f := range frames {
						if buf, err = dec.DecodeAll(f, buf[:0]); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}
