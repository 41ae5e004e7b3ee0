package variantweb

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// TestBandWeb checks the band family's ground truth: every copy's J is the exact Jaccard
// of the looped shingle sets the crawler computes from the two HTML pages (parse.Parse,
// dedup's shingles), in [0.80, 1]; a copy is linked from its source alone; the same seed
// gives the same bytes.
func TestBandWeb(t *testing.T) {
	seed := testtools.Seed(t, "./internal/variantweb/")
	o := BandOptions{Sources: 40, Hosts: 4}
	bw, err := GenerateBand(seed, o)
	if err != nil {
		t.Fatal(err)
	}
	again, err := GenerateBand(seed, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Pages) != len(bw.Pages) {
		t.Fatalf("same seed: %d pages, then %d", len(bw.Pages), len(again.Pages))
	}
	for i := range bw.Pages {
		if !bytes.Equal(bw.Pages[i].Body, again.Pages[i].Body) {
			t.Fatalf("same seed: %s%s differs", bw.Pages[i].Host, bw.Pages[i].Path)
		}
	}
	if want := 4 + 40*(1+3); len(bw.Pages) != want {
		t.Fatalf("%d pages, want %d", len(bw.Pages), want)
	}
	byKey := map[string]*BandPage{}
	linkedFrom := map[string][]string{}
	for i := range bw.Pages {
		p := &bw.Pages[i]
		byKey[p.Host+p.Path] = p
		for _, h := range hrefs(p.Body) {
			linkedFrom[p.Host+"/"+h] = append(linkedFrom[p.Host+"/"+h], p.Path)
		}
	}
	copies := 0
	for _, p := range bw.Pages {
		if p.Source == "" {
			continue
		}
		copies++
		if p.J < 0.80 || p.J > 1 {
			t.Errorf("%s: J %.4f outside [0.80, 1]", p.Path, p.J)
		}
		src := byKey[p.Host+p.Source]
		if got := linkedFrom[p.Host+p.Path]; len(got) != 1 || got[0] != p.Source {
			t.Errorf("%s linked from %v, want its source %s alone", p.Path, got, p.Source)
		}
		sa, err := Shingles(src.Body, "http://"+p.Host+p.Source)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := Shingles(p.Body, "http://"+p.Host+p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Jaccard(sa, sb); math.Abs(got-p.J) > 1e-12 {
			t.Errorf("%s: J %.6f by construction, %.6f from the HTML", p.Path, p.J, got)
		}
		if len(sb) != p.Words || !strings.HasSuffix(p.Path, ".html") {
			t.Errorf("%s: %d shingles from the HTML, %d words", p.Path, len(sb), p.Words)
		}
	}
	if copies != 120 {
		t.Errorf("%d copies, want 120", copies)
	}
	if len(bw.Seeds()) != 4 {
		t.Errorf("seeds %v, want the 4 hosts' index pages", bw.Seeds())
	}
}
