// Package zipfweb is issue 30's scale web: H hosts on distinct loopback
// addresses (127.40.0.1, ...), N pages in all, generated on the fly from
// (seed, host, page index) and served from memory by one Go process (one
// listener per address, one http.Server; serve.go). Nothing is written to
// disk, so a web of a million pages costs no more to set up than one of ten
// thousand.
//
// Each page holds 300-1,500 words drawn from a Zipf distribution over a
// generated vocabulary (the idea of internal/scaleweb), and 10-40 distinct
// links, each wrapped around one of its words: mostly to pages of its own
// host, a share to pages of other hosts. Of the N pages, round(N/10) are
// exact copies (the same bytes) of an original page of their host and
// round(N/10) are near copies: the original with c words replaced, at least
// w apart (dedup.BandCopy), so that the exact Jaccard similarity of their
// looped w-word shingle sets is (n - w*c) / (n + w*c). That formula needs
// every shingle of the original to be distinct: a page's first word is its
// own marker ("q" and its global index; the vocabulary has no q), so every
// shingle that loops around the end holds it, and the others are drawn with
// no w-gram repeated.
//
// Every page is reachable from the seeds (the hosts' index pages) through
// originals alone (a crawler need not follow a duplicate's links): the
// originals of a host form a binary tree rooted at its index, and each copy
// is linked from one original of its host.
package zipfweb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/scaleweb"
)

// Options sizes the web. Zero fields take the defaults noted.
type Options struct {
	Hosts        int     // hosts (default 250; at most 62,500)
	Pages        int     // pages in all, the hosts' index pages included (default 10,000)
	Seed         uint64  // the same options give the same pages
	Port         int     // the port links to other hosts name (default 80; Listen sets it)
	ExactShare   float64 // share of the pages that are exact copies (default 0.1)
	NearShare    float64 // share of the pages that are near copies (default 0.1)
	NearLo       float64 // a near copy's Jaccard is drawn from [NearLo, NearHi] (default 0.85)
	NearHi       float64 // (default 0.99)
	ShingleWords int     // w of the near copies' Jaccard: the crawler's dedup.shingle_words (default 5)
	CrossShare   float64 // share of a page's free links that go to other hosts (default 0.1)
}

const (
	minWords, maxWords = 300, 1500
	minLinks, maxLinks = 10, 40
	vocabularySize     = 20000
	zipfS              = 1.1
	maxHosts           = 250 * 250
)

func (o Options) withDefaults() Options {
	if o.Hosts <= 0 {
		o.Hosts = 250
	}
	if o.Pages <= 0 {
		o.Pages = 10000
	}
	if o.Port <= 0 {
		o.Port = 80
	}
	if o.ExactShare == 0 {
		o.ExactShare = 0.1
	}
	if o.NearShare == 0 {
		o.NearShare = 0.1
	}
	if o.NearLo == 0 {
		o.NearLo = 0.85
	}
	if o.NearHi == 0 {
		o.NearHi = 0.99
	}
	if o.ShingleWords <= 0 {
		o.ShingleWords = 5
	}
	if o.CrossShare == 0 {
		o.CrossShare = 0.1
	}
	return o
}

// Kind is what a page is.
type Kind uint8

const (
	Original Kind = iota
	ExactCopy
	NearCopy
)

func (k Kind) String() string { return [...]string{"original", "exact", "near"}[k] }

// HostIP is the loopback address of host i (0-based): 127.40.0.1, ...,
// 127.40.0.250, 127.40.1.1, ... (no .0 or .255 last octet).
func HostIP(i int) string { return fmt.Sprintf("127.40.%d.%d", i/250, 1+i%250) }

// PagePath is the path of page j of a host: "/" for its index.
func PagePath(j int) string {
	if j == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(j) + ".html"
}

// Web is a generated web. Its methods are safe for concurrent use.
type Web struct {
	o       Options
	voc     []string
	alias   alias   // Zipf over voc
	exact   int     // exact copies in all
	near    int     // near copies in all
	perm    feistel // over the non-index pages: who is a copy
	hosts   []hostInfo
	hostIPs []string
}

// hostInfo is a host's structure: which pages are originals and copies.
type hostInfo struct {
	n         int
	originals []int32 // page indexes, ascending; originals[0] = 0
	copies    []int32 // page indexes, ascending
	rank      []int32 // page j's index in originals or copies
}

// New builds the structure of the web (a few bytes a page); pages are made
// when asked for.
func New(o Options) (*Web, error) {
	o = o.withDefaults()
	if o.Hosts > maxHosts {
		return nil, fmt.Errorf("zipfweb: %d hosts, at most %d", o.Hosts, maxHosts)
	}
	if o.NearLo < 0 || o.NearLo > o.NearHi || o.NearHi >= 1 {
		return nil, fmt.Errorf("zipfweb: near copies' Jaccard in [%g, %g]: need 0 <= lo <= hi < 1", o.NearLo, o.NearHi)
	}
	w := &Web{o: o}
	w.exact = int(math.Round(float64(o.Pages) * o.ExactShare))
	w.near = int(math.Round(float64(o.Pages) * o.NearShare))
	if o.Pages < o.Hosts || w.exact+w.near > o.Pages-o.Hosts {
		return nil, errors.New("zipfweb: too few pages for the hosts' index pages and the copies")
	}
	w.perm = newFeistel(uint64(o.Pages-o.Hosts), o.Seed)
	w.voc = scaleweb.Vocabulary(rand.New(rand.NewPCG(o.Seed, 0x5eed)), vocabularySize)
	weights := make([]float64, len(w.voc))
	for i := range weights {
		weights[i] = math.Pow(float64(i+1), -zipfS)
	}
	w.alias = newAlias(weights)
	for h := range o.Hosts {
		n := w.HostPages(h)
		hi := hostInfo{n: n, rank: make([]int32, n)}
		for j := range n {
			if w.Kind(h, j) == Original {
				hi.rank[j] = int32(len(hi.originals))
				hi.originals = append(hi.originals, int32(j))
			} else {
				hi.rank[j] = int32(len(hi.copies))
				hi.copies = append(hi.copies, int32(j))
			}
		}
		// An original links to at most 2 tree children and
		// ceil(copies/originals) copies: within minLinks.
		if m := len(hi.originals); 2+(len(hi.copies)+m-1)/m > minLinks {
			return nil, fmt.Errorf("zipfweb: host %d has %d copies for %d originals", h, len(hi.copies), m)
		}
		w.hosts = append(w.hosts, hi)
		w.hostIPs = append(w.hostIPs, HostIP(h))
	}
	return w, nil
}

// Options returns the options, defaults filled in.
func (w *Web) Options() Options { return w.o }

// Hosts returns the hosts' addresses.
func (w *Web) Hosts() []string { return w.hostIPs }

// Seeds returns the hosts' index URLs.
func (w *Web) Seeds() []string {
	s := make([]string, len(w.hostIPs))
	for i, ip := range w.hostIPs {
		s[i] = "http://" + ip + ":" + strconv.Itoa(w.o.Port) + "/"
	}
	return s
}

// HostPages returns the number of pages of host h: Pages/Hosts, one more
// for the first Pages%Hosts hosts.
func (w *Web) HostPages(h int) int {
	n := w.o.Pages / w.o.Hosts
	if h < w.o.Pages%w.o.Hosts {
		n++
	}
	return n
}

// global is page (h, j)'s index in [0, Pages): the hosts' pages interleaved,
// so the index pages are 0..Hosts-1.
func (w *Web) global(h, j int) int { return j*w.o.Hosts + h }

// Kind returns what page j of host h is: exactly round(Pages*ExactShare)
// pages are exact copies and round(Pages*NearShare) near copies, picked by a
// seeded permutation of the pages other than the index pages.
func (w *Web) Kind(h, j int) Kind {
	if j == 0 {
		return Original
	}
	p := int(w.perm.permute(uint64(w.global(h, j) - w.o.Hosts)))
	switch {
	case p < w.exact:
		return ExactCopy
	case p < w.exact+w.near:
		return NearCopy
	}
	return Original
}

// Source returns the original page (of host h) that copy j copies, and j for
// an original.
func (w *Web) Source(h, j int) int {
	if w.Kind(h, j) == Original {
		return j
	}
	o := w.hosts[h].originals
	return int(o[mix(w.o.Seed, 0x50c, uint64(w.global(h, j)))%uint64(len(o))])
}

// NearJaccard returns the exact Jaccard similarity of the looped
// ShingleWords-word shingle sets of near copy j of host h and its source
// (1 for any other page).
func (w *Web) NearJaccard(h, j int) float64 {
	if w.Kind(h, j) != NearCopy {
		return 1
	}
	_, jac := w.nearCopy(h, j, w.original(h, w.Source(h, j)).words)
	return jac
}

// page is a page before rendering: its words, and the link at each word
// position that has one.
type page struct {
	title string
	words []string
	links map[int]string // word position -> href
	paras []int          // paragraph lengths in words
}

// page builds page (h, j): its source's page, with words replaced for a near copy.
func (w *Web) page(h, j int) page {
	src := w.Source(h, j)
	p := w.original(h, src)
	if w.Kind(h, j) == NearCopy {
		p.words, _ = w.nearCopy(h, j, p.words)
	}
	return p
}

func (w *Web) nearCopy(h, j int, src []string) ([]string, float64) {
	r := rand.New(rand.NewPCG(w.o.Seed^0xc0b1e5, uint64(w.global(h, j))))
	return dedup.BandCopy(r, src, w.o.NearLo, w.o.NearHi, w.o.ShingleWords)
}

// original builds original page j of host h.
func (w *Web) original(h, j int) page {
	g := w.global(h, j)
	r := rand.New(rand.NewPCG(w.o.Seed, uint64(g)))
	n := minWords + r.IntN(maxWords-minWords+1)
	p := page{title: fmt.Sprintf("%s page %d", HostIP(h), j), words: make([]string, n)}
	p.words[0] = "q" + strconv.FormatUint(uint64(g), 36)
	ws := w.o.ShingleWords
	ids := make([]int32, n)
	seen := seenPool.Get().(*gramSet)
	defer seenPool.Put(seen)
	seen.reset()
	for i := 1; i < n; i++ {
		for try := 0; ; try++ {
			ids[i] = w.alias.draw(r)
			// The w-gram ending at i (positions >= 1: the marker makes
			// the others distinct): drawn again if seen (a hash
			// collision only costs a draw).
			if i < ws || seen.add(gramHash(ids[i-ws+1:i+1])) || try > 1000 {
				break
			}
		}
		p.words[i] = w.voc[ids[i]]
	}
	for left := n; left > 0; {
		k := min(left, 40+r.IntN(41))
		p.paras = append(p.paras, k)
		left -= k
	}
	p.links = w.links(h, j, r, n)
	return p
}

// links picks original j's link targets (10-40, distinct, never itself) and
// puts them at evenly spaced word positions.
func (w *Web) links(h, j int, r *rand.Rand, n int) map[int]string {
	hi := &w.hosts[h]
	total := minLinks + r.IntN(maxLinks-minLinks+1)
	var hrefs []string
	has := map[string]bool{PagePath(j): true}
	add := func(href string) bool {
		if has[href] {
			return false
		}
		has[href] = true
		hrefs = append(hrefs, href)
		return true
	}
	// The tree of originals and the copies this original links to.
	i := int(hi.rank[j])
	m := len(hi.originals)
	for _, c := range []int{2*i + 1, 2*i + 2} {
		if c < m {
			add(PagePath(int(hi.originals[c])))
		}
	}
	for c := i; c < len(hi.copies); c += m {
		add(PagePath(int(hi.copies[c])))
	}
	// Free links: other hosts' pages (CrossShare), else this host's. A
	// small host may have fewer distinct targets than asked for.
	for tries := 0; len(hrefs) < total && tries < 50*maxLinks; tries++ {
		if w.o.Hosts > 1 && r.Float64() < w.o.CrossShare {
			o := (h + 1 + r.IntN(w.o.Hosts-1)) % w.o.Hosts
			add("http://" + w.hostIPs[o] + ":" + strconv.Itoa(w.o.Port) + PagePath(r.IntN(w.hosts[o].n)))
		} else {
			add(PagePath(r.IntN(hi.n)))
		}
	}
	links := make(map[int]string, len(hrefs))
	for k, href := range hrefs {
		links[1+k*(n-1)/len(hrefs)] = href
	}
	return links
}

// Page returns the HTML of page j of host h, and false if there is no such page.
func (w *Web) Page(h, j int) ([]byte, bool) {
	if h < 0 || h >= len(w.hosts) || j < 0 || j >= w.hosts[h].n {
		return nil, false
	}
	return w.render(w.page(h, j)), true
}

func (w *Web) render(p page) []byte {
	size := 200 + len(p.title) + 12*len(p.paras)
	for _, word := range p.words {
		size += len(word) + 1
	}
	for _, href := range p.links {
		size += len(href) + 15
	}
	b := make([]byte, 0, size)
	b = append(b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>"...)
	b = append(b, p.title...)
	b = append(b, "</title></head>\n<body>\n"...)
	i := 0
	for _, k := range p.paras {
		b = append(b, "<p>"...)
		for e := i + k; i < e; i++ {
			if i > 0 {
				b = append(b, ' ')
			}
			if href, ok := p.links[i]; ok {
				b = append(b, `<a href="`...)
				b = append(b, href...)
				b = append(b, `">`...)
				b = append(b, p.words[i]...)
				b = append(b, "</a>"...)
			} else {
				b = append(b, p.words[i]...)
			}
		}
		b = append(b, "</p>\n"...)
	}
	return append(b, "</body></html>\n"...)
}

// alias is Walker's alias table: a draw from a discrete distribution in
// constant time.
type alias struct {
	prob  []float64
	other []int32
}

func newAlias(weights []float64) alias {
	n := len(weights)
	sum := 0.0
	for _, x := range weights {
		sum += x
	}
	a := alias{prob: make([]float64, n), other: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range weights {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.other[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i], a.other[i] = 1, i
	}
	return a
}

func (a alias) draw(r *rand.Rand) int32 {
	i := r.IntN(len(a.prob))
	if r.Float64() < a.prob[i] {
		return int32(i)
	}
	return a.other[i]
}

// gramSet is a set of w-gram hashes for one page (open addressing; 0 is
// the empty slot, so a hash of 0 is stored as 1).
type gramSet struct{ slots []uint64 }

var seenPool = sync.Pool{New: func() any { return &gramSet{slots: make([]uint64, 4096)} }}

func (s *gramSet) reset() { clear(s.slots) }

// add inserts k and reports whether it was new.
func (s *gramSet) add(k uint64) bool {
	if k == 0 {
		k = 1
	}
	mask := uint64(len(s.slots) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = k
			return true
		case k:
			return false
		}
	}
}

func gramHash(ids []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, id := range ids {
		h = (h ^ uint64(uint32(id))) * 1099511628211
	}
	return h
}

// mix is a seeded 64-bit hash (splitmix64's finalizer).
func mix(seed, salt, x uint64) uint64 {
	z := x + seed*0x9e3779b97f4a7c15 + salt*0xbf58476d1ce4e5b9
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// feistel is a seeded permutation of [0, n): a balanced Feistel network
// over the smallest even number of bits that holds n, walked until it lands
// inside.
type feistel struct {
	n, half uint64 // half: bits of each half
	seed    uint64
}

func newFeistel(n, seed uint64) feistel {
	bits := uint64(2)
	for uint64(1)<<bits < n {
		bits += 2
	}
	return feistel{n: n, half: bits / 2, seed: seed}
}

func (f feistel) permute(x uint64) uint64 {
	mask := uint64(1)<<f.half - 1
	for {
		l, r := x>>f.half, x&mask
		for round := range uint64(4) {
			l, r = r, l^(mix(f.seed, round+1, r)&mask)
		}
		x = l<<f.half | r
		if x < f.n {
			return x
		}
	}
}
