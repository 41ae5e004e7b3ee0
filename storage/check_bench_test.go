package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCheck measures Check on a store of HORSESHOE_CHECK_BENCH_MB
// megabytes (default 64, so that a smoke run stays quick), written as a
// crawl writes it: per page a 20 KB text in the value log and a 3 KB
// response, a record and a signature in the tables (about 1 byte of tables
// for 6 of value log), then closed. The figure in Check's comment and BENCHMARKS.md:
// HORSESHOE_CHECK_BENCH_MB=700 go test -run '^$' -bench BenchmarkCheck -benchtime 3x ./storage/
func BenchmarkCheck(b *testing.B) {
	mb := 64
	if s := os.Getenv("HORSESHOE_CHECK_BENCH_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("HORSESHOE_CHECK_BENCH_MB=%q: want a number of megabytes", s)
		}
		mb = n
	}
	dir := filepath.Join(b.TempDir(), "data")
	db, err := Open(dir, Options{MinFreeBytes: -1, SyncWrites: false})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := func(n int) string { // as incompressible as text is, roughly
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, "w%x ", r.Uint32()%50000)
		}
		return b.String()
	}
	text := words(20000)
	written := 0
	for i := 0; written < mb<<20; i++ {
		raw := fmt.Sprintf("HTTP/1.1 200 OK\r\nX-Page: %d\r\n\r\n<p>", i) + words(3000)
		err := db.Update(func(tx *Tx) error {
			id := tx.NewID()
			if err := tx.PutPage(&Page{ID: id, URL: fmt.Sprintf("http://example.com/%d", i), Host: "example.com", Status: 200, Class: ClassUnique, HasRaw: true}); err != nil {
				return err
			}
			if err := tx.PutText(id, fmt.Sprintf("%d %s", i, text)); err != nil {
				return err
			}
			if err := tx.PutSignature(id, []byte(fmt.Sprintf("%064d", i))); err != nil {
				return err
			}
			return tx.PutRaw(id, []byte("GET / HTTP/1.1\r\n\r\n"), []byte(raw))
		})
		if err != nil {
			b.Fatal(err)
		}
		written += len(text) + len(raw) + 200
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	var size, tables int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if st, err := e.Info(); err == nil {
			size += st.Size()
			if strings.HasSuffix(e.Name(), ".sst") {
				tables += st.Size()
			}
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		found, err := Check(dir)
		if err != nil || len(found) > 0 {
			b.Fatalf("Check: %v %v", found, err)
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "store-MB")
	b.ReportMetric(float64(tables)/(1<<20), "table-MB")
}
