//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestOpenBesideWriterIsLocked: opening a store a crawl holds says it is
// in use, never that it is damaged, even while the writer's files look
// damaged to Check (a table being replaced by a compaction; here, one moved
// away for the moment) and while it writes, flushes and compacts.
func TestOpenBesideWriterIsLocked(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	defer db.Close()
	write := func(from, n int) {
		for i := from; i < from+n; i++ {
			err := db.Update(func(tx *Tx) error {
				id := tx.NewID()
				if err := tx.PutText(id, crashText(uint64(i))); err != nil {
					return err
				}
				return tx.PutRaw(id, nil, []byte(crashRaw(uint64(i))))
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}
	write(0, 3000)
	if err := db.db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table written")
	}
	if err := os.Rename(ssts[0], ssts[0]+".moved"); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		if other, err := Open(dir, Options{ReadOnly: ro}); !errors.Is(err, ErrLocked) {
			if err == nil {
				other.Close()
			}
			t.Errorf("open (read-only %v) beside a writer, a table missing for the moment: %v; want ErrLocked", ro, err)
		}
	}
	if err := os.Rename(ssts[0]+".moved", ssts[0]); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); write(3000, 6000) }()
	opens := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); opens++ {
		time.Sleep(2 * time.Millisecond)
		if other, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
			if err == nil {
				other.Close()
			}
			t.Fatalf("read-only open %d beside a writer: %v; want ErrLocked", opens, err)
		}
	}
	wg.Wait()
	t.Logf("%d read-only opens beside a writer, all ErrLocked", opens)
}
