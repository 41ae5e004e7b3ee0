package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/variantweb"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// TestBandWebRecall is issue 32's recall property on a crawl: a band web of
// internal/variantweb (sources of 200 to 3,000 random words on 16 loopback
// hosts, 3 copies of each at J uniform in [0.80, 1], so a web dense with near
// copies) crawled in process by 16 workers, with the candidate stage at its
// default and with `dedup.bands: -1` (the seeds' filter alone). Per 0.01 band
// of J from 0.90:
//
//   - precision: every dropped page names an original at exact J >= 0.90
//     (exact settlement's guarantee), so no pair below 0.90 is joined; every
//     source is kept (nothing at J >= 0.90 comes before it);
//   - recall: the copies in the band that the crawl drops reach
//     dedup.RecallFloor(n, p, alpha) with p = C(b) (1 - SettleMissBound).
//
// The bound. A copy is linked from its source alone, and the engine decides a
// page (and indexes it when unique) in its commit, before it queues the page's
// links, so every copy is decided with its source in the index. Within one
// source's group at most the 2 other copies can be indexed beside it, and no
// other page ever reaches the settled band (random words: J about 0, m < 60
// but with a probability far below 1e-30), so the source is among the
// MaxSettle = 3 best estimates of any copy and is settled whenever it is a
// candidate in the band. A copy at J in band [b, b+0.01) is therefore dropped
// with probability at least the pipeline's candidate curve C(J) >= C(b) (it
// rises with J; Detector.Curve: P(12,7,1) by default, P(6,14,2) with
// bands -1) times 1 - SettleMissBound (a candidate at J >= 0.90 falls below
// the settled band with probability <= 4.1e-7 <= 1e-6, docs/DEDUP.md): the
// same per-pair bound as isolated pairs (dedup's TestBandRecall). Whether the
// copy is dropped as a duplicate of its source or of another copy at J >=
// 0.90 (the first settled at or above the threshold wins), it is dropped. The
// copies of one source are drawn independently given the source, and a band
// of width 0.01 out of 0.20 rarely holds two copies of one source, so the
// band's count of drops is a sum of independent trials each succeeding with
// probability >= p, stochastically at least Binomial(n, p), and
// P(drops < RecallFloor(n, p, alpha)) <= alpha. alpha is 1e-4 over the 10
// bands of both crawls (union bound: 5e-6 a band), so a sound pipeline fails
// this test with probability at most 1e-4 per run. With the default
// (P(12,7,1) >= 0.99959 from 0.90) and about 100 copies a band the floor is
// 0.96-0.99 of the band; with bands -1 it is the filter's (0.42 at 0.90).
//
// The seed is printed and set by HORSESHOE_SEED.
func TestBandWebRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls two webs of 2,700 pages")
	}
	t.Parallel() // its own web
	seed := testtools.Seed(t, "./cmd/crawler/")
	bw, err := variantweb.GenerateBand(seed, variantweb.BandOptions{Sources: 667, Copies: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := bw.Write(filepath.Join(dir, "web")); err != nil {
		t.Fatal(err)
	}
	// The pages by host and path, with their shingle sets (the tokens hold no URL).
	byKey := map[string]*variantweb.BandPage{}
	shingles := map[string][]uint64{}
	for i := range bw.Pages {
		p := &bw.Pages[i]
		k := p.Host + p.Path
		byKey[k] = p
		if shingles[k], err = variantweb.Shingles(p.Body, "http://"+k); err != nil {
			t.Fatal(err)
		}
	}
	pipelines := []struct {
		name  string
		bands int
	}{{"default", 0}, {"filter-only", -1}}
	alpha := 1e-4 / float64(len(pipelines)*10) // 10 bands a crawl
	for _, pl := range pipelines {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel() // each crawl its own servers of the one web
			crawlBandWebRecall(t, bw, dir, pl.name, pl.bands, byKey, shingles, alpha)
		})
	}
}

// crawlBandWebRecall serves the band web written under dir/web, crawls it
// with dedup.bands set (0: the default), and checks TestBandWebRecall's
// properties, each band's recall at false-failure probability alpha.
func crawlBandWebRecall(t *testing.T, bw *variantweb.BandWeb, dir, name string, bandsOpt int,
	byKey map[string]*variantweb.BandPage, shingles map[string][]uint64, alpha float64) {
	const lo, bands = 0.90, 10
	o := dedup.DefaultOptions()
	o.Bands = bandsOpt
	det, err := dedup.New(o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := loopweb.Start(filepath.Join(dir, "web"), loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var seeds []string
	for _, s := range bw.Seeds() {
		seeds = append(seeds, w.URL(s[0], s[1]))
	}
	byURL := map[string]*variantweb.BandPage{}
	keyOf := map[string]string{}
	for k, p := range byKey {
		u := w.URL(p.Host, p.Path)
		byURL[u], keyOf[u] = p, k
	}
	d := crawlBandWeb(t, dir, name, bandsOpt, seeds)

	// Every page recorded, none fetched twice.
	fetched := map[string]int{}
	for _, r := range w.Requests() {
		if r.Path != "/robots.txt" {
			fetched[r.Host+" "+r.Path]++
		}
	}
	for k, n := range fetched {
		if n > 1 {
			t.Errorf("%s fetched %d times", k, n)
		}
	}
	pages := pagesByURL(&d)
	var n, dropped [bands]int
	below, belowDropped := 0, 0
	for u, p := range byURL {
		rp, ok := pages[u]
		if !ok || rp.Status != 200 {
			t.Errorf("%s not recorded (or not fetched: %+v)", u, rp)
			continue
		}
		drop := rp.Class == report.ClassNearDuplicate || rp.Class == report.ClassExactDuplicate
		if drop {
			if _, ok := byURL[rp.DuplicateOf]; !ok {
				t.Errorf("%s dropped as a copy of %q, not a page of the web", u, rp.DuplicateOf)
				continue
			}
			if j := dedup.ExactJaccard(shingles[keyOf[u]], shingles[keyOf[rp.DuplicateOf]]); j < o.Threshold-1e-12 {
				t.Errorf("%s dropped as a copy of %s at J %.4f < %g", u, rp.DuplicateOf, j, o.Threshold)
			}
		} else if rp.Class != report.ClassUnique {
			t.Errorf("%s is %s", u, rp.Class)
		}
		switch {
		case p.Source == "":
			if drop {
				t.Errorf("source %s dropped (as a copy of %s)", u, rp.DuplicateOf)
			}
		case p.J < o.Threshold:
			below++ // dropped only as a copy of a page at J >= 0.90 (checked above)
			if drop {
				belowDropped++
			}
		default:
			k := variantweb.BandOf(p.J) - 90
			n[k]++
			if drop {
				dropped[k]++
			}
		}
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "band   copies  recall  theory  floor\n")
	for k := range bands {
		edge := lo + float64(k)/100
		if n[k] == 0 {
			continue
		}
		p := det.Curve([]float64{edge})[0] * (1 - dedup.SettleMissBound)
		floor := dedup.RecallFloor(n[k], p, alpha)
		fmt.Fprintf(&tab, "%.2f  %6d  %.3f   %.4f  %d\n", edge, n[k], float64(dropped[k])/float64(n[k]), p, floor)
		if dropped[k] < floor {
			t.Errorf("band %.2f: %d of %d copies dropped, want at least %d (curve %.5f at the band's edge, false failure <= %.0e)",
				edge, dropped[k], n[k], floor, p, alpha)
		}
	}
	t.Logf("%s (seed %d, %d pages; of %d copies below %g to their source, %d dropped as copies of a page at J >= %g):\n%s",
		name, bw.Seed, len(bw.Pages), below, o.Threshold, belowDropped, o.Threshold, tab.String())
}

// crawlBandWeb crawls the band web from seeds with 16 workers and
// dedup.bands set (0: the default), and returns its report.
func crawlBandWeb(t *testing.T, dir, name string, bands int, seeds []string) report.Data {
	t.Helper()
	data := filepath.Join(dir, "data-"+name)
	args := []string{"crawl", "--data", data, "--delay", "0", "--workers", "16", "--quiet"}
	if bands != 0 {
		cfg := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "dedup:\n  bands: %d\n", bands), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", cfg)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), append(args, seeds...), &out, &errOut); err != nil {
		t.Fatalf("crawl: %v\n%s", err, errOut.String())
	}
	jsonPath := filepath.Join(dir, name+".json")
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", jsonPath}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var d report.Data
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
