package session

import (
	"sync/atomic"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// releaseEvery is how many reads of a store an export makes between two
// releases of its mapped pages. A read faults in the kernel's readahead
// around it (up to some 128 KiB): every 1,024 reads left 338 MB resident on
// a 50,000-page store, every 128 reads 78 MB, for 0.3 ms CPU a record more
// (BENCHMARKS.md, issue 30).
const releaseEvery = 128

// releasingStore is a store an export reads whole: every releaseEvery reads
// it asks the kernel to reclaim the store's mapped pages
// (storage.DB.ReleaseMapped), so that the export's resident set does not
// grow with the store it has read (issue 30). Its reads may come from
// several goroutines (main-text extraction).
type releasingStore struct {
	*storage.DB
	reads atomic.Int64
}

func (s *releasingStore) read() {
	if s.reads.Add(1)%releaseEvery == 0 {
		s.DB.ReleaseMapped()
	}
}

func (s *releasingStore) ForEachPage(fn func(*storage.Page) error) error {
	return s.DB.ForEachPage(func(p *storage.Page) error { s.read(); return fn(p) })
}

func (s *releasingStore) ForEachSkipped(fn func(*storage.Page) error) error {
	return s.DB.ForEachSkipped(func(p *storage.Page) error { s.read(); return fn(p) })
}

func (s *releasingStore) Page(id uint64) (*storage.Page, error) {
	s.read()
	return s.DB.Page(id)
}

func (s *releasingStore) Text(id uint64) (string, error) {
	s.read()
	return s.DB.Text(id)
}

func (s *releasingStore) Raw(id uint64) ([]byte, []byte, error) {
	s.read()
	return s.DB.Raw(id)
}
