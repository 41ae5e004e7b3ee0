package storage

import (
	"fmt"
	"sync"
	"testing"
)

// TestNewIDNeverGoesBack: a transaction that reserved ids (writing next_id)
// and commits after another that reserved more must not lower next_id, or
// a reopened store would hand out ids the other used.
func TestNewIDNeverGoesBack(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	took, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	used := map[uint64]bool{}
	var mu sync.Mutex
	use := func(id uint64) {
		mu.Lock()
		used[id] = true
		mu.Unlock()
	}
	errc := make(chan error, 1)
	go func() {
		errc <- db.Update(func(tx *Tx) error {
			id := tx.NewID()
			once.Do(func() { close(took); <-release })
			use(id)
			return tx.PutPage(&Page{ID: id, URL: "http://a/A"})
		})
	}()
	<-took
	err := db.Update(func(tx *Tx) error {
		for range idBlock + 77 {
			id := tx.NewID()
			use(id)
			if err := tx.PutPage(&Page{ID: id, URL: fmt.Sprintf("http://a/B%d", id)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	err = db.Update(func(tx *Tx) error {
		if id := tx.NewID(); used[id] {
			t.Errorf("after reopen, NewID returned %d, used before the restart", id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
