//go:build go1.25

package crawl

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// gatedSignatures is a store whose signatures are read only once gate is
// closed: a rebuild of the duplicate index still running.
type gatedSignatures struct {
	fakeDB
	gate chan struct{}
}

func (g gatedSignatures) ForEachSignature(ctx context.Context, fn func(uint64, []byte) error) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.fakeDB.ForEachSignature(ctx, fn)
}

// TestDecisionWaitsForIndexRebuild: on resume the duplicate index is rebuilt
// beside the first requests (issue 30), and a page's decision waits for the
// whole index: a copy of a page of an earlier run, committed while the
// rebuild runs, is not decided before it ends, and is then decided the
// exact duplicate of that page (not unique against part of the index).
func TestDecisionWaitsForIndexRebuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		det, err := dedup.New(dedup.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		var tokens []string
		for i := range 300 {
			tokens = append(tokens, fmt.Sprintf("word%d", i*7%101))
		}
		b, err := det.Sign(tokens).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		s := newFakeStore()
		s.sigs[7] = b
		st := gatedSignatures{fakeDB{s}, make(chan struct{})}
		e := NewShared(Options{MaxDepth: 10}, st, newFakeFrontier(), nil, nil, det, LocalIndex(det), nil)
		if err := e.Restore(); err != nil {
			t.Fatal(err)
		}
		got := make(chan dedup.Decision, 1)
		go func() {
			d, err := e.decide(&storage.Page{ID: 9}, &pageContent{doc: &parse.Document{Tokens: tokens}, sig: det.Sign(tokens)})
			if err != nil {
				t.Error(err)
			}
			got <- d
		}()
		synctest.Wait() // the decision blocked, or made
		select {
		case d := <-got:
			close(st.gate) // the rebuild ends before the bubble does
			_, _ = e.IndexLoaded()
			t.Fatalf("decided %v (original %d) before the index was rebuilt", d.Class, d.Original)
		default:
		}
		close(st.gate)
		if d := <-got; d.Class != dedup.Exact || d.Original != 7 {
			t.Errorf("decided %v (original %d) once the index was rebuilt, want exact of 7", d.Class, d.Original)
		}
		if n, err := e.IndexLoaded(); n != 1 || err != nil {
			t.Errorf("rebuild: %d signatures, %v; want 1", n, err)
		}
	})
}
