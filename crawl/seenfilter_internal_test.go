package crawl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// randomURL is a URL drawn from r (a space large enough that two draws
// rarely meet, small enough that some do).
func randomURL(r *rand.Rand) string {
	return fmt.Sprintf("http://h%d.test/p/%d", r.IntN(50), r.IntN(1<<20))
}

// TestSeenFilterNeverForgets: against a map, a URL added is always "maybe",
// at every size, across the growth of the filter into new generations
// (four URLs in the first). Seeded (HORSESHOE_SEED).
func TestSeenFilterNeverForgets(t *testing.T) {
	r := rand.New(rand.NewPCG(testtools.Seed(t, "./crawl/"), 2))
	f := newSeenFilter(4, seenFilterRate)
	added := map[string]bool{}
	var order []string
	for i := range 20000 {
		u := randomURL(r)
		if r.IntN(2) == 0 {
			f.add(u)
			if !added[u] {
				order = append(order, u)
			}
			added[u] = true
		}
		q := randomURL(r)
		if added[q] && !f.mayHave(q) {
			t.Fatalf("step %d: %s added but the filter says not", i, q)
		}
		if i%1000 == 0 {
			for _, u := range order {
				if !f.mayHave(u) {
					t.Fatalf("step %d: %s added but the filter says not", i, u)
				}
			}
		}
	}
	for _, u := range order {
		if !f.mayHave(u) {
			t.Fatalf("%s added but the filter says not", u)
		}
	}
	// 4 + 8 + ... + 4*2^(g-1) >= the URLs added: at least log2 of them / 4.
	if g := len(f.gens); g < 10 {
		t.Errorf("%d generations for %d URLs from 4, want >= 10", g, len(order))
	}
}

// TestSeenFilterResume: through a filtered Badger store, a URL marked seen
// is never reported unseen: while the filter takes marks, after the store
// is reopened with a new, empty filter (before its load ends every answer
// is the store's), and after the load, with the filter grown past its first
// generations. Seeded (HORSESHOE_SEED).
func TestSeenFilterResume(t *testing.T) {
	r := rand.New(rand.NewPCG(testtools.Seed(t, "./crawl/"), 3))
	dir := t.TempDir()
	marked := map[string]uint64{}
	var unmarked []string
	for range 300 {
		unmarked = append(unmarked, fmt.Sprintf("http://never.test/%d", r.Uint64()))
	}

	check := func(t *testing.T, st badgerStore, when string) {
		t.Helper()
		err := st.Update(context.Background(), func(tx Tx) error {
			for u, want := range marked {
				id, seen, err := tx.SeenID(u)
				if err != nil {
					return err
				}
				if !seen || id != want {
					t.Errorf("%s: SeenID(%s) = %d, %v, want %d, true", when, u, id, seen, want)
				}
				if _, fresh, err := tx.CheckAndMark(u, tx.NewID); err != nil || fresh {
					t.Errorf("%s: CheckAndMark(%s) marked a seen URL again (%v)", when, u, err)
				}
			}
			for _, u := range unmarked {
				if _, seen, err := tx.SeenID(u); err != nil || seen {
					t.Errorf("%s: SeenID(%s) = seen, never marked (%v)", when, u, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mark := func(t *testing.T, st badgerStore, n int) {
		t.Helper()
		err := st.Update(context.Background(), func(tx Tx) error {
			for range n {
				u := randomURL(r)
				id, fresh, err := tx.CheckAndMark(u, tx.NewID)
				if err != nil {
					return err
				}
				if _, ok := marked[u]; ok == fresh {
					t.Errorf("CheckAndMark(%s): fresh %v, marked before %v", u, fresh, ok)
				}
				if fresh {
					marked[u] = id
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	open := func(t *testing.T) (badgerStore, func()) {
		db, err := storage.Open(dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sf := newSeenFilter(4, seenFilterRate)
		return badgerStore{db: db, seen: sf}, func() { sf.stopLoad(); db.Close() }
	}

	st, closeDB := open(t)
	if st.seen.covered.Load() {
		t.Fatal("a new filter covers the store before its load")
	}
	st.seen.startLoad(context.Background(), st.db.ForEachSeenURL)
	if _, err := st.seen.loaded(); err != nil || !st.seen.covered.Load() {
		t.Fatalf("load of an empty store: %v, covered %v", err, st.seen.covered.Load())
	}
	for range 5 {
		mark(t, st, 200)
		check(t, st, "first run")
	}
	closeDB()

	st, closeDB = open(t)
	defer closeDB()
	check(t, st, "reopened, before the load")
	// The load is held after its first mark until released: meanwhile
	// every answer is still exact, and the marks made go in the filter.
	started, release := make(chan struct{}), make(chan struct{})
	st.seen.startLoad(context.Background(), func(fn func(string) error) error {
		first := true
		return st.db.ForEachSeenURL(func(u string) error {
			if first {
				first = false
				close(started)
				<-release
			}
			return fn(u)
		})
	})
	<-started
	check(t, st, "reopened, during the load")
	mark(t, st, 200) // marks made before the load ends
	check(t, st, "reopened, during the load, marked")
	close(release)
	n, err := st.seen.loaded()
	if err != nil || !st.seen.covered.Load() {
		t.Fatalf("load: %v, covered %v", err, st.seen.covered.Load())
	}
	if n < len(marked)-200 {
		t.Errorf("load read %d marks, want the %d made before it", n, len(marked)-200)
	}
	check(t, st, "reopened, loaded")
	mark(t, st, 500)
	check(t, st, "reopened, loaded, grown")
	if len(st.seen.gens) < 5 {
		t.Errorf("%d generations, want the filter grown past its first", len(st.seen.gens))
	}
}
