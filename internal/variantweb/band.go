package variantweb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// The band family (issue 32) is not a variant of a corpus site: it is a web of near
// copies whose exact Jaccard similarity is spread evenly across the band around the
// duplicate threshold, so that recall can be read per 0.01 band of J. Each source page
// holds random words (dedup.BandWords: distinct words, so the exact J of a copy is known
// by construction) and has copies, each made from it by dedup.BandCopy (J uniform in
// [JLo, JHi], c words replaced at least 5 apart): copies of the source, not of each other.
//
// Layout: the sources are spread over Hosts loopback hosts; each host's /index.html links
// to its sources (/s<i>.html), and each source links to its copies (/s<i>-c<k>.html),
// which link nowhere. A crawl therefore fetches every source before any of its copies
// (a copy is only linked from its source), and decides the source first.

// BandOptions shapes a band web. Zero fields take the defaults in brackets.
type BandOptions struct {
	Sources            int     // source pages [1000]
	Copies             int     // copies of each source [3]
	Hosts              int     // hosts the sources are spread over [16]
	FirstHost          int     // the hosts are 127.0.0.FirstHost ... [120]
	MinWords, MaxWords int     // a source's length in words, uniform [200, 3000]
	JLo, JHi           float64 // a copy's J to its source, uniform [0.80, 1.0]
}

func (o *BandOptions) fill() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Sources, 1000)
	def(&o.Copies, 3)
	def(&o.Hosts, 16)
	def(&o.FirstHost, 120)
	def(&o.MinWords, 200)
	def(&o.MaxWords, 3000)
	if o.JLo == 0 && o.JHi == 0 {
		o.JLo, o.JHi = 0.80, 1.0
	}
	switch {
	case o.Sources < 1 || o.Copies < 1 || o.Hosts < 1:
		return fmt.Errorf("variantweb: band web of %d sources, %d copies, %d hosts", o.Sources, o.Copies, o.Hosts)
	case o.FirstHost < 2 || o.FirstHost+o.Hosts > 255:
		return fmt.Errorf("variantweb: band hosts 127.0.0.%d to .%d", o.FirstHost, o.FirstHost+o.Hosts-1)
	case o.MinWords < 5 || o.MaxWords < o.MinWords:
		return fmt.Errorf("variantweb: band pages of %d to %d words", o.MinWords, o.MaxWords)
	case o.JLo < 0 || o.JHi > 1 || o.JLo > o.JHi:
		return fmt.Errorf("variantweb: band J in [%g, %g]", o.JLo, o.JHi)
	}
	return nil
}

// BandPage is one page of a band web.
type BandPage struct {
	Host, Path string // 127.0.0.x, "/s12-c2.html"
	Body       []byte
	// Source is the Path of the page it copies, on the same host ("" for a source or an
	// index page); J is its exact Jaccard to it (looped 5-word shingles of the words).
	Source string
	J      float64
	Words  int
}

// BandWeb is a generated band web.
type BandWeb struct {
	Seed    uint64
	Options BandOptions
	Pages   []BandPage // per host: the index page, then each source followed by its copies
}

// GenerateBand builds the band web of seed: the same seed and options give the same
// bytes.
func GenerateBand(seed uint64, o BandOptions) (*BandWeb, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	w := dedup.DefaultOptions().ShingleWords
	rng := rand.New(rand.NewPCG(seed, 0xba2d))
	bw := &BandWeb{Seed: seed, Options: o}
	hub := make([][]string, o.Hosts) // each host's source paths
	var pages []BandPage
	for i := range o.Sources {
		h := i % o.Hosts
		host := fmt.Sprintf("127.0.0.%d", o.FirstHost+h)
		src := fmt.Sprintf("/s%d.html", i)
		hub[h] = append(hub[h], src)
		words := dedup.BandWords(rng, o.MinWords+rng.IntN(o.MaxWords-o.MinWords+1))
		var copies []BandPage
		var links []string
		for k := range o.Copies {
			b, j := dedup.BandCopy(rng, words, o.JLo, o.JHi, w)
			p := fmt.Sprintf("/s%d-c%d.html", i, k+1)
			links = append(links, p)
			copies = append(copies, BandPage{Host: host, Path: p, Body: bandHTML(b, nil), Source: src, J: j, Words: len(b)})
		}
		pages = append(pages, BandPage{Host: host, Path: src, Body: bandHTML(words, links), Words: len(words)})
		pages = append(pages, copies...)
	}
	for h := range o.Hosts {
		host := fmt.Sprintf("127.0.0.%d", o.FirstHost+h)
		bw.Pages = append(bw.Pages, BandPage{Host: host, Path: "/index.html", Body: bandHTML(nil, hub[h])})
	}
	bw.Pages = append(bw.Pages, pages...)
	return bw, nil
}

// bandHTML is a page of one paragraph of words and links with no text (so that the
// visible text, and the shingles, are the words alone).
func bandHTML(words, links []string) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n")
	if len(words) > 0 {
		b.WriteString("<p>")
		b.WriteString(strings.Join(words, " "))
		b.WriteString("</p>\n")
	}
	for _, l := range links {
		fmt.Fprintf(&b, "<a href=\"%s\"></a>\n", strings.TrimPrefix(l, "/"))
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// Seeds are the web's entry pages: each host's /index.html, as (host, path).
func (bw *BandWeb) Seeds() [][2]string {
	var out [][2]string
	for _, p := range bw.Pages {
		if p.Path == "/index.html" {
			out = append(out, [2]string{p.Host, p.Path})
		}
	}
	return out
}

// Write lays the web out for loopweb.Start under dir (dir/<host>/<path>).
func (bw *BandWeb) Write(dir string) error {
	var errs []error
	for _, p := range bw.Pages {
		name := filepath.Join(dir, p.Host, filepath.FromSlash(strings.TrimPrefix(p.Path, "/")))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("variantweb: %w", err)
		}
		errs = append(errs, os.WriteFile(name, p.Body, 0o644))
	}
	return errors.Join(errs...)
}

// BandOf returns the 0.01 band of J that j falls in, as its lower edge times 100
// (0.9137 -> 91; 1 -> 99, the last band holding 1), computed so that a J exactly on an
// edge (540/600 = 0.90) is in the band above it.
func BandOf(j float64) int {
	return min(int(math.Floor(j*100+1e-9)), 99)
}
