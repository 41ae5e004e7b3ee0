package crawl

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The seen filter answers "certainly not seen" for a URL without a store
// read (issue 30: at 100k pages most link checks were for URLs never seen,
// and each such miss read every level's table index and bloom filter in
// Badger: Tx.SeenID went from 0.005 to 0.206 CPU ms a page from 10k to 100k
// pages). It is a Bloom filter in front of the seen-set, as Heritrix's
// BloomUriUniqFilter: "not in the filter" means "not seen"; "maybe" is asked
// of the store, exactly, as before. The seen cache (seencache.go) answers
// the other way round, "certainly seen", for the URLs met again and again.
//
// Exactness. The filter never forgets a URL added to it; every mark the
// engine writes adds its URL first (filteredTx.MarkSeen), committed or not:
// a transaction rolled back or run again leaves an extra URL, which costs
// only a store read (a false "maybe"). The marks already in the store when
// the engine opened it are added by a key-only scan of the seen-set
// (startLoad, from Restore, beside the first requests); until the scan has
// ended, covered is false and every lookup goes to the store. The scan reads
// a snapshot taken after the filter began to take the engine's marks, so
// that together they hold every mark. Only an engine over its own Badger
// store (New) has a filter: Badger locks its directory, so no other process
// writes marks, and the engine's writers of marks are serialized (commitMu),
// so a mark made without reading the store (filteredTx.CheckAndMark) cannot
// race another transaction's mark of the same URL, which Badger's conflict
// detection (on reads) would otherwise catch. A shared store (Redis) has
// other writers and no filter.
//
// Size. A generation designed for n URLs at false-positive rate p has
// m = ceil(-n ln p / (ln 2)^2) bits and k = round(m/n ln 2) hash functions
// (the optimum; p = (1 - e^(-kn/m))^k). When a generation holds its n URLs,
// a new one twice its size takes the new URLs, at half its rate (a scalable
// Bloom filter, Almeida et al. 2007): generation i is designed for
// n0 2^i URLs at p0 2^-i with p0 = p/2, so a lookup's rate, at most the sum
// of the generations' rates, stays below p = 1%. Bits per URL are
// -log2(p_i) / ln 2: 11.0 in the first generation (p0 = 0.5%), 12.5 in the
// second, 14.0 in the third; about 1.5 to 2 bytes a URL (1.4 MB for the
// first 2^20 URLs, 13 MB for 7 M).
const (
	seenFilterDesign = 1 << 20 // n0: URLs of the first generation
	seenFilterRate   = 0.01    // p: false-positive rate of a lookup
)

// seenFilterN0 is the first generation's design size (tests lower it).
var seenFilterN0 uint64 = seenFilterDesign

// seenFilter is the Bloom filter of the URLs marked in the seen-set.
type seenFilter struct {
	seed    maphash.Seed
	covered atomic.Bool // the filter holds every mark in the store

	mu   sync.Mutex
	gens []*bloomGen // the last takes new URLs
	n0   uint64
	p0   float64

	load struct {
		done   chan struct{}
		cancel context.CancelFunc
		n      int
		err    error
	}
}

// bloomGen is one generation: a bit array of m bits, k probes a URL.
type bloomGen struct {
	bits  []uint64
	m     uint64
	k     int
	n     uint64 // design size
	count uint64 // URLs added
}

func newSeenFilter(n0 uint64, p float64) *seenFilter {
	f := &seenFilter{seed: maphash.MakeSeed(), n0: max(n0, 1), p0: p / 2}
	f.gens = []*bloomGen{newBloomGen(f.n0, f.p0)}
	return f
}

// newBloomGen sizes a generation for n URLs at rate p (see above).
func newBloomGen(n uint64, p float64) *bloomGen {
	m := uint64(math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)))
	m = max(m, 64)
	k := max(int(math.Round(float64(m)/float64(n)*math.Ln2)), 1)
	return &bloomGen{bits: make([]uint64, (m+63)/64), m: m, k: k, n: n}
}

// probes calls fn with the k bit positions of hash h (double hashing:
// h1 + i h2, Kirsch and Mitzenmacher).
func (g *bloomGen) probes(h uint64, fn func(bit uint64) bool) bool {
	h1, h2 := h, (h>>32|h<<32)*0x9e3779b97f4a7c15|1
	for i := 0; i < g.k; i++ {
		if !fn((h1 + uint64(i)*h2) % g.m) {
			return false
		}
	}
	return true
}

func (g *bloomGen) add(h uint64) {
	g.probes(h, func(b uint64) bool { g.bits[b/64] |= 1 << (b % 64); return true })
	g.count++
}

func (g *bloomGen) has(h uint64) bool {
	return g.probes(h, func(b uint64) bool { return g.bits[b/64]&(1<<(b%64)) != 0 })
}

// add puts u in the filter (before its mark is written).
func (f *seenFilter) add(u string) {
	h := maphash.String(f.seed, u)
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.gens[len(f.gens)-1]
	if last.count >= last.n {
		i := len(f.gens)
		last = newBloomGen(f.n0<<i, f.p0/float64(uint64(1)<<i))
		f.gens = append(f.gens, last)
	}
	last.add(h)
}

// mayHave reports whether u may have been added (false: it was not).
func (f *seenFilter) mayHave(u string) bool {
	h := maphash.String(f.seed, u)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.gens {
		if g.has(h) {
			return true
		}
	}
	return false
}

// notSeen reports whether u is certainly not in the seen-set: only once the
// filter covers the store, and u is not in it.
func (f *seenFilter) notSeen(u string) bool {
	return f.covered.Load() && !f.mayHave(u)
}

// startLoad adds the marks already in the store (each, from a key-only scan
// of the seen-set) in a goroutine, and sets covered when they are all in.
func (f *seenFilter) startLoad(parent context.Context, each func(fn func(u string) error) error) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	f.mu.Lock()
	if f.load.done != nil {
		f.mu.Unlock()
		cancel()
		return // loaded or loading
	}
	f.load.done, f.load.cancel = done, cancel
	f.mu.Unlock()
	go func() {
		defer close(done)
		n := 0
		err := each(func(u string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			f.add(u)
			n++
			return nil
		})
		if err == nil {
			f.covered.Store(true)
		} else {
			err = fmt.Errorf("cannot load the seen filter (the seen-set is read from the store instead): %w", err)
		}
		f.mu.Lock()
		f.load.n, f.load.err = n, err
		f.mu.Unlock()
	}()
}

// loaded waits for the load startLoad began, if any, and returns the number
// of marks it read.
func (f *seenFilter) loaded() (int, error) {
	f.mu.Lock()
	done := f.load.done
	f.mu.Unlock()
	if done == nil {
		return 0, nil
	}
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load.n, f.load.err
}

// stopLoad ends a load still running and waits for it (before the store
// closes).
func (f *seenFilter) stopLoad() {
	f.mu.Lock()
	cancel := f.load.cancel
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		_, _ = f.loaded()
	}
}

// filteredTx is a Badger transaction whose seen-set answers "not seen" from
// the engine's seen filter when it can, and adds every mark to it.
type filteredTx struct {
	*storage.Tx
	f *seenFilter
}

// SeenID is storage.Tx's, without the read for a URL the filter has not.
func (t filteredTx) SeenID(u string) (uint64, bool, error) {
	if t.f.notSeen(u) {
		return 0, false, nil
	}
	return t.Tx.SeenID(u)
}

// CheckAndMark is storage.Tx's, without the read for a URL the filter has
// not (the engine's marks are serialized: see above).
func (t filteredTx) CheckAndMark(u string, newID func() uint64) (uint64, bool, error) {
	if t.f.notSeen(u) {
		id := newID()
		return id, true, t.MarkSeen(u, id)
	}
	id, fresh, err := t.Tx.CheckAndMark(u, newID)
	if fresh {
		t.f.add(u) // before the commit: the mark is not visible yet
	}
	return id, fresh, err
}

// MarkSeen adds u to the filter and marks it.
func (t filteredTx) MarkSeen(u string, id uint64) error {
	t.f.add(u)
	return t.Tx.MarkSeen(u, id)
}
