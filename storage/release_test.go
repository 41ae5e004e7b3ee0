package storage

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestStoreMappings(t *testing.T) {
	maps := "" +
		"00400000-01000000 r-xp 00000000 08:01 11 /usr/bin/crawler\n" +
		"7f0000000000-7f0008000000 rw-s 00000000 08:01 21 /data/crawl/000001.vlog\n" +
		"7f0010000000-7f0010100000 r--s 00000000 08:01 22 /data/crawl/000004.sst\n" +
		"7f0020000000-7f0021000000 rw-s 00000000 08:01 23 /data/crawl/00005.mem\n" +
		"7f0030000000-7f0030100000 r--s 00000000 08:01 24 /data/crawl/000003.sst (deleted)\n" +
		"7f0040000000-7f0040100000 r--s 00000000 08:01 25 /data/crawl2/000001.sst\n" +
		"7f0050000000-7f0050100000 r--s 00000000 08:01 26 /data/crawl/sub/000001.sst\n" +
		"7f0060000000-7f0060100000 r--p 00000000 08:01 27 /data/crawl/000007.sst\n" +
		"7f0068000000-7f0068100000 rw-s 00000000 08:01 29 /data/crawl/MANIFEST\n" +
		"7f0070000000-7f0070200000 rw-p 00000000 00:00 0 \n" +
		"7f0080000000-7f0080100000 r--s 00000000 08:01 28 /data/crawl/000009.sst"
	got := storeMappings([]byte(maps), "/data/crawl")
	want := []addrRange{{0x7f0000000000, 0x7f0008000000}, {0x7f0010000000, 0x7f0010100000}, {0x7f0020000000, 0x7f0021000000}, {0x7f0080000000, 0x7f0080100000}}
	if len(got) != len(want) {
		t.Fatalf("storeMappings = %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("storeMappings = %x, want %x", got, want)
		}
	}
	if got := storeMappings([]byte("7f0000000000-7f0008000000 rw-s 00000000 08:01 21 /data/a b/000001.vlog\n"), "/data/a b"); len(got) != 1 {
		t.Errorf("a data dir with a space: %x, want one range", got)
	}
}

// TestReleaserKicksEveryInterval: a release is asked for each time the bytes
// written pass a multiple of the interval, and only then.
func TestReleaserKicksEveryInterval(t *testing.T) {
	r := &releaser{every: 100, kick: make(chan struct{}, 1)} // no goroutine: the test drains the kicks
	kicked := func() bool {
		select {
		case <-r.kick:
			return true
		default:
			return false
		}
	}
	steps := []struct {
		n    int
		want bool
	}{{50, false}, {49, false}, {1, true}, {99, false}, {250, true}, {0, false}, {-5, false}, {50, false}, {1, true}}
	for i, s := range steps {
		r.wrote(s.n)
		if got := kicked(); got != s.want {
			t.Fatalf("step %d: wrote %d (total %d): kicked %v, want %v", i, s.n, r.written.Load(), got, s.want)
		}
	}
	var none *releaser // a read-only store's
	none.wrote(1 << 30)
	none.close()
}

// TestReleaseKeepsContent writes pages' values through a store that releases
// its mapped pages in between (synchronously here, as often as the releaser
// would at most), and reads every value back: the release is advice about
// residency, never about content. It also checks that the release finds the
// store's value log, so that it is not a no-op that passes.
func TestReleaseKeepsContent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the store's pages are released on Linux only")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := filepath.Join(t.TempDir(), "data")
	db := open(t, dir)
	defer db.Close()
	if db.rel == nil {
		t.Fatal("a writable store has no releaser")
	}
	release := mappedRelease(dir, slog.New(slog.DiscardHandler))
	if release == nil {
		t.Fatal("no release for the store's dir")
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	const pages = 300 // 300 x 64 KB: 19 MB of values, past a memtable and into a second value log write
	want := map[uint64][]byte{}
	for i := range pages {
		body := make([]byte, 64<<10)
		for j := range body {
			body[j] = byte('a' + rng.IntN(26))
		}
		small := make([]byte, 100+rng.IntN(2000)) // below the value threshold: in the tables
		for j := range small {
			small[j] = byte('a' + rng.IntN(26))
		}
		var id uint64
		before := db.rel.written.Load()
		if err := db.Update(func(tx *Tx) error {
			id = tx.NewID()
			if err := tx.PutRaw(id, small, body); err != nil {
				return err
			}
			return tx.PutText(id, string(small))
		}); err != nil {
			t.Fatal(err)
		}
		if got := db.rel.written.Load() - before; got < int64(len(body)+2*len(small)) {
			t.Fatalf("page %d: the releaser counted %d bytes written, want at least %d", i, got, len(body)+2*len(small))
		}
		want[id] = append(small[:len(small):len(small)], body...)
		if i%20 == 19 {
			maps, err := os.ReadFile("/proc/self/maps")
			if err != nil {
				t.Fatal(err)
			}
			if len(storeMappings(maps, abs)) == 0 {
				t.Fatalf("no mapping of the store's files in /proc/self/maps under %s", abs)
			}
			release()
		}
	}
	release()
	for id, w := range want {
		req, resp, err := db.Raw(id)
		if err != nil {
			t.Fatalf("page %d: %v", id, err)
		}
		text, err := db.Text(id)
		if err != nil {
			t.Fatalf("page %d text: %v", id, err)
		}
		n := len(req)
		if !bytes.Equal(append(req[:n:n], resp...), w) || text != string(w[:n]) {
			t.Fatalf("page %d: content changed after a release", id)
		}
	}
}
