package report

import (
	"bytes"
	"io"
	"testing"
)

// countWriter counts bytes written, for SetBytes.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func benchWriter(b *testing.B, write func(io.Writer, *Data) error) {
	d := bigData(b, 10000)
	var cw countWriter
	if err := write(&cw, d); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(cw.n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := write(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteJSON(b *testing.B) { benchWriter(b, WriteJSON) }
func BenchmarkWriteText(b *testing.B) { benchWriter(b, WriteText) }
func BenchmarkWriteHTML(b *testing.B) { benchWriter(b, WriteHTML) }

func BenchmarkHosts(b *testing.B) {
	d := bigData(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		if len(Hosts(d)) != 50 {
			b.Fatal("wrong host count")
		}
	}
}

func BenchmarkClusters(b *testing.B) {
	d := bigData(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		if len(Clusters(d)) == 0 {
			b.Fatal("no clusters")
		}
	}
}

func BenchmarkTruncateMiddle(b *testing.B) {
	s := "https://www.example.com/" + string(bytes.Repeat([]byte("segment/"), 30)) + "index.html"
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if displayWidth(truncateMiddle(s, 60)) > 60 {
			b.Fatal("too wide")
		}
	}
}
