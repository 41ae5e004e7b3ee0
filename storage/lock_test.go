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
	// Pages of 5-13 KB (crashText without its 1-3 MB ones, which only
	// slowed the test: they go to the value log and make no tables).
	put := func(i int) error {
		return db.Update(func(tx *Tx) error {
			id := tx.NewID()
			if err := tx.PutText(id, pageText(uint64(i), false)); err != nil {
				return err
			}
			return tx.PutRaw(id, nil, []byte(crashRaw(uint64(i))))
		})
	}
	for i := range 3000 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
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

	// The writer writes, flushes and compacts for as long as the opens go
	// on, and no longer.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	written := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 3000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(i); err != nil {
				t.Error(err)
				return
			}
			written++
		}
	}()
	stopWriter := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriter()
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
	stopWriter()
	t.Logf("%d read-only opens beside a writer writing %d pages, all ErrLocked", opens, written)
}
