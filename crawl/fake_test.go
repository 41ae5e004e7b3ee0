package crawl

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Fakes of the seam for table tests of the link policy and the commit: an
// in-memory store (writes applied at once; no test here needs a rollback)
// and a frontier that only numbers and collects queue entries.

type fakeStore struct {
	nextID   uint64
	seen     map[string]uint64
	queue    map[string]frontier.Item // host \x00 seq
	pages    map[uint64]*storage.Page
	texts    map[uint64]string
	sigs     map[uint64][]byte
	raw      map[uint64][2][]byte
	links    map[uint64][]uint64
	skipped  map[string]*storage.Page
	deps     map[string][]storage.Dependent
	evidence map[string][]byte // kind/key
	meta     map[string][]byte
	updates  int
}

func newFakeStore() *fakeStore {
	return &fakeStore{nextID: 1, seen: map[string]uint64{}, queue: map[string]frontier.Item{}, pages: map[uint64]*storage.Page{},
		texts: map[uint64]string{}, sigs: map[uint64][]byte{}, raw: map[uint64][2][]byte{}, links: map[uint64][]uint64{},
		skipped: map[string]*storage.Page{}, deps: map[string][]storage.Dependent{}, evidence: map[string][]byte{}, meta: map[string][]byte{}}
}

var _ Store = fakeDB{}
var _ Tx = (*fakeStore)(nil)

// fakeDB is the Store side of a fakeStore.
type fakeDB struct{ s *fakeStore }

func (d fakeDB) PutMeta(_ context.Context, name string, v []byte) error { return d.s.PutMeta(name, v) }

func (d fakeDB) Update(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.s.updates++
	return fn(d.s)
}

func (s *fakeStore) SeenID(u string) (uint64, bool, error) { id, ok := s.seen[u]; return id, ok, nil }
func (s *fakeStore) CheckAndMark(u string, newID func() uint64) (uint64, bool, error) {
	if id, ok := s.seen[u]; ok {
		return id, false, nil
	}
	s.seen[u] = newID()
	return s.seen[u], true, nil
}
func qk(host string, seq uint64) string              { return host + "\x00" + string(rune(seq)) }
func (s *fakeStore) PutQueue(it frontier.Item) error { s.queue[qk(it.Host, it.Seq)] = it; return nil }
func (s *fakeStore) DeleteQueue(host string, seq uint64) error {
	delete(s.queue, qk(host, seq))
	return nil
}
func (s *fakeStore) NewID() uint64 { s.nextID++; return s.nextID - 1 }
func (s *fakeStore) GetPage(id uint64) (*storage.Page, error) {
	p, ok := s.pages[id]
	if !ok {
		return nil, storage.ErrNotFound
	}
	cp := *p
	return &cp, nil
}
func (s *fakeStore) PutPage(p *storage.Page) error { cp := *p; s.pages[p.ID] = &cp; return nil }
func (s *fakeStore) DeletePage(id uint64) error    { delete(s.pages, id); return nil }
func (s *fakeStore) PutRaw(id uint64, req, resp []byte) error {
	s.raw[id] = [2][]byte{req, resp}
	return nil
}
func (s *fakeStore) PutText(id uint64, text string) error       { s.texts[id] = text; return nil }
func (s *fakeStore) PutSignature(id uint64, sig []byte) error   { s.sigs[id] = sig; return nil }
func (s *fakeStore) PutLinks(id uint64, h []uint64) error       { s.links[id] = h; return nil }
func (s *fakeStore) GetLinks(id uint64) ([]uint64, error)       { return s.links[id], nil }
func (s *fakeStore) PutSkipped(p *storage.Page) error           { cp := *p; s.skipped[p.URL] = &cp; return nil }
func (s *fakeStore) GetSkipped(u string) (*storage.Page, error) { return s.skipped[u], nil }
func (s *fakeStore) DeleteSkipped(u string) error               { delete(s.skipped, u); return nil }
func (s *fakeStore) AddDependent(cp string, d storage.Dependent) error {
	s.deps[cp] = append(s.deps[cp], d)
	return nil
}
func (s *fakeStore) Dependents(cp string) ([]storage.Dependent, error) {
	return append([]storage.Dependent(nil), s.deps[cp]...), nil
}
func (s *fakeStore) DeleteDependent(cp string, d storage.Dependent) error {
	var keep []storage.Dependent
	for _, x := range s.deps[cp] {
		if x.URL != d.URL || x.ID != d.ID {
			keep = append(keep, x)
		}
	}
	s.deps[cp] = keep
	return nil
}
func (s *fakeStore) PutEvidence(kind, key string, v any) error {
	b, err := json.Marshal(v)
	s.evidence[kind+"/"+key] = b
	return err
}
func (s *fakeStore) TakeEvidence(kind, key string) ([]byte, bool, error) {
	b, ok := s.evidence[kind+"/"+key]
	delete(s.evidence, kind+"/"+key)
	return b, ok, nil
}
func (s *fakeStore) PutMeta(name string, v []byte) error { s.meta[name] = v; return nil }
func (d fakeDB) GetMeta(_ context.Context, name string) ([]byte, error) {
	b, ok := d.s.meta[name]
	if !ok {
		return nil, storage.ErrNotFound
	}
	return b, nil
}

func (d fakeDB) Page(_ context.Context, id uint64) (*storage.Page, error) { return d.s.GetPage(id) }
func (d fakeDB) Text(_ context.Context, id uint64) (string, error) {
	t, ok := d.s.texts[id]
	if !ok {
		return "", storage.ErrNotFound
	}
	return t, nil
}
func (d fakeDB) ForEachPage(_ context.Context, fn func(*storage.Page) error) error {
	ids := make([]uint64, 0, len(d.s.pages))
	for id := range d.s.pages {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if err := fn(d.s.pages[id]); err != nil {
			return err
		}
	}
	return nil
}
func (d fakeDB) ForEachSkipped(_ context.Context, fn func(*storage.Page) error) error {
	for _, p := range d.s.skipped {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
func (d fakeDB) ForEachSignature(_ context.Context, fn func(uint64, []byte) error) error {
	for id, b := range d.s.sigs {
		if err := fn(id, b); err != nil {
			return err
		}
	}
	return nil
}
func (d fakeDB) ForEachEvidence(_ context.Context, kind string, fn func(string, []byte) error) error {
	for k, v := range d.s.evidence {
		if key, ok := strings.CutPrefix(k, kind+"/"); ok {
			if err := fn(key, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// queued returns the URLs with a queue entry, sorted.
func (s *fakeStore) queued() []string {
	var out []string
	for _, it := range s.queue {
		out = append(out, it.Target())
	}
	sort.Strings(out)
	return out
}

// skips returns the URLs with a skip record, sorted.
func (s *fakeStore) skips() []string {
	var out []string
	for u := range s.skipped {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// fakeFrontier numbers queue entries and keeps what is pushed and released.
type fakeFrontier struct {
	seq      map[string]uint64
	pushed   []frontier.Item
	released []frontier.Outcome
	requeue  bool // Release's answer
	giveUps  []frontier.GiveUp
	statsErr error // Stats's Err (a shared crawl's queue that cannot be read)
	nextErr  error // Next's error (nil: frontier.ErrDone, nothing to lease)
}

func newFakeFrontier() *fakeFrontier { return &fakeFrontier{seq: map[string]uint64{}} }

var _ Frontier = (*fakeFrontier)(nil)

func (f *fakeFrontier) Next(ctx context.Context) (*frontier.Item, error) {
	if f.nextErr != nil {
		return nil, f.nextErr
	}
	return nil, frontier.ErrDone
}
func (f *fakeFrontier) Release(it *frontier.Item, o frontier.Outcome) bool {
	f.released = append(f.released, o)
	return f.requeue
}
func (f *fakeFrontier) Finish(*frontier.Item)                    {}
func (f *fakeFrontier) Push(items ...frontier.Item)              { f.pushed = append(f.pushed, items...) }
func (f *fakeFrontier) Assign(host string) uint64                { f.seq[host]++; return f.seq[host] }
func (f *fakeFrontier) Hosts() []string                          { return nil }
func (f *fakeFrontier) Stats() frontier.Stats                    { return frontier.Stats{Err: f.statsErr} }
func (f *fakeFrontier) GiveUps() []frontier.GiveUp               { g := f.giveUps; f.giveUps = nil; return g }
func (f *fakeFrontier) Stop()                                    {}
func (f *fakeFrontier) SetCrawlDelay(string, time.Duration) bool { return false }
func (f *fakeFrontier) SetPoliteKey(string, string)              {}
func (f *fakeFrontier) AwaitPoliteKey(string)                    {}

// pushedURLs returns the URLs pushed to the frontier, sorted.
func (f *fakeFrontier) pushedURLs() []string {
	var out []string
	for _, it := range f.pushed {
		out = append(out, it.Target())
	}
	sort.Strings(out)
	return out
}
