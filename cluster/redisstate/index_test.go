//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// words returns a random text of n words from a vocabulary of 5,000.
func words(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", r.IntN(5000))
	}
	return out
}

// variant changes k random words of base.
func variant(r *rand.Rand, base []string, k int) []string {
	out := append([]string(nil), base...)
	for i := 0; i < k; i++ {
		out[r.IntN(len(out))] = fmt.Sprintf("x%d", r.IntN(1_000_000))
	}
	return out
}

// The shared index decides as the local detector does, page by page, for
// generated families (exact copies, near copies at several edit counts,
// unrelated pages), with exact settlement and without, for both filter
// presets, with the band stage (the default) and without. The local detector runs without its simhash index (the shared
// index does not share it).
func TestIndexDecidesAsDetector(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	for _, preset := range []string{dedup.PresetAltaVista, dedup.PresetBing} {
		for _, bands := range []int{0, -1} {
			for _, withSettle := range []bool{true, false} {
				name := fmt.Sprintf("%s-bands=%d-settle=%v", preset, bands, withSettle)
				t.Run(name, func(t *testing.T) {
					opt := dedup.Options{Filter: dedup.FilterOptions{Preset: preset}, Simhash: false, Bands: bands}
					det, err := dedup.New(opt)
					if err != nil {
						t.Fatal(err)
					}
					rdb := srv.Client(t)
					if _, err := EnsureServerConfig(ctx, rdb); err != nil {
						t.Fatal(err)
					}
					c, err := Open(ctx, rdb, name, Options{Pages: 10_000})
					if err != nil {
						t.Fatal(err)
					}
					x := c.NewIndex(det, DedupOptions{})
					r := rand.New(rand.NewPCG(7, 9))
					texts := map[uint64][]string{}
					var id uint64
					differ, dups := 0, 0
					for fam := 0; fam < 25; fam++ {
						base := words(r, 200+r.IntN(300))
						for _, k := range []int{0, 0, 1, 3, 6, 12, 25, 60} {
							id++
							toks := base
							if k > 0 {
								toks = variant(r, base, k)
							}
							texts[id] = toks
							sig := det.Sign(toks)
							var settle dedup.Settler
							if withSettle {
								mine := det.Shingles(toks, nil)
								settle = func(orig uint64) (float64, bool) {
									return dedup.ExactJaccard(mine, det.Shingles(texts[orig], nil)), true
								}
							}
							local := det.CheckAndAddSettled(id, sig, settle)
							shared, err := x.CheckAndAdd(ctx, id, sig, settle)
							if err != nil {
								t.Fatal(err)
							}
							if local.Class != dedup.Unique {
								dups++
							}
							if local.Class != shared.Class || local.Original != shared.Original {
								differ++
								t.Logf("page %d (family %d, %d edits): local %v of %d (J %.3f), shared %v of %d (J %.3f)",
									id, fam, k, local.Class, local.Original, local.Similarity, shared.Class, shared.Original, shared.Similarity)
							}
						}
					}
					t.Logf("%d pages, %d duplicates, %d decided otherwise", id, dups, differ)
					if dups < 40 {
						t.Fatalf("only %d duplicates: the families do not test much", dups)
					}
					// Without settlement the shared index's 8-bit samples may
					// move an estimate at the threshold by (1-J)/256: allow one
					// page in a hundred; with settlement none.
					if (withSettle && differ > 0) || differ > int(id)/100 {
						t.Fatalf("%d of %d pages decided otherwise", differ, id)
					}
				})
			}
		}
	}
}

// Two workers index copies of one page at once (an exact copy, or one word
// changed: J about 0.97, settled exactly), through the seam's shape: one is
// unique, the other its duplicate.
func TestIndexRace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	opt := dedup.Options{Simhash: false}
	det, err := dedup.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	races := 0
	for round := 0; round < 40; round++ {
		base := words(r, 300)
		copies := [][]string{base, base}
		if round%2 == 1 {
			copies[1] = variant(r, base, 1)
		}
		if j := dedup.ExactJaccard(det.Shingles(copies[0], nil), det.Shingles(copies[1], nil)); j < 0.95 {
			t.Fatalf("round %d: the copies are at J %.3f", round, j)
		}
		// What one process decides (the supershingle filter may miss a
		// pair at J = 0.96: then both are kept, here too).
		one, _ := dedup.New(opt)
		one.CheckAndAdd(1, det.Sign(copies[0]))
		oneSettle := func(uint64) (float64, bool) {
			return dedup.ExactJaccard(det.Shingles(copies[0], nil), det.Shingles(copies[1], nil)), true
		}
		wantOne := one.CheckAndAddSettled(2, det.Sign(copies[1]), oneSettle).Class != dedup.Unique
		var wg sync.WaitGroup
		decs := make([]dedup.Decision, 2)
		for w := 0; w < 2; w++ {
			c := openOn(t, srv, Options{})
			x := c.NewIndex(det, DedupOptions{})
			sig := det.Sign(copies[w])
			mine, theirs := det.Shingles(copies[w], nil), det.Shingles(copies[1-w], nil)
			settle := func(uint64) (float64, bool) { return dedup.ExactJaccard(mine, theirs), true }
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				d, err := x.CheckAndAdd(ctx, uint64(round*10+w+1), sig, settle)
				if err != nil {
					t.Error(err)
				}
				decs[w] = d
			}(w)
		}
		wg.Wait()
		uniques := 0
		for _, d := range decs {
			if d.Class == dedup.Unique {
				uniques++
			}
		}
		if wantOne {
			races++
		}
		if wantOne && uniques != 1 || !wantOne && uniques != 2 {
			t.Fatalf("round %d: %v and %v; one process keeps one: %v", round, decs[0], decs[1], wantOne)
		}
	}
	if races < 30 {
		t.Fatalf("only %d of 40 rounds were races one process decides as a duplicate", races)
	}
}
