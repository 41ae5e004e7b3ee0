// Package scaleweb generates a web of many hosts for the scale-out benchmark
// (issue 19): N hosts on distinct loopback addresses (127.20.0.1, ...), each
// with a few dozen linked pages of distinct generated text, written as one
// directory per host address, and serves it with one nginx (nginx.go).
//
// The text is drawn from a Zipf distribution over a generated vocabulary, so
// every page has its own shingles (the dedup index does its full work and
// finds no copies); each host has a template (navigation and footer words
// shared by its pages), as real sites do. Pages link to their two children
// in a binary tree rooted at the host's index (every page is reachable), to
// the index and to a few pages of their host at random, and to pages of other
// hosts (already seeded: these exercise the crawl-wide seen-set).
package scaleweb

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Options sizes the web. Zero fields take the defaults noted.
type Options struct {
	Hosts        int    // hosts (default 1,000; at most 62,500)
	PagesPerHost int    // pages a host, its index included (default 30)
	Words        int    // mean words of a page's body (default 400)
	CrossLinks   int    // links a page to other hosts' pages (default 2)
	Port         int    // the port the pages' cross-host links name (default 80)
	Seed         uint64 // of the generator: the same options give the same files
}

func (o Options) withDefaults() Options {
	if o.Hosts <= 0 {
		o.Hosts = 1000
	}
	if o.PagesPerHost <= 0 {
		o.PagesPerHost = 30
	}
	if o.Words <= 0 {
		o.Words = 400
	}
	if o.CrossLinks < 0 {
		o.CrossLinks = 0
	} else if o.CrossLinks == 0 {
		o.CrossLinks = 2
	}
	if o.Port <= 0 {
		o.Port = 80
	}
	return o
}

// maxHosts is the number of addresses HostIP hands out: 250 a third octet.
const maxHosts = 250 * 250

// HostIP is the loopback address of host i (0-based): 127.20.0.1,
// 127.20.0.2, ... 127.20.0.250, 127.20.1.1, ... (no .0 or .255 last octet).
func HostIP(i int) string {
	return fmt.Sprintf("127.20.%d.%d", i/250, 1+i%250)
}

// PagePath is the path of page j (0-based) of a host: "/" for its index.
func PagePath(j int) string {
	if j == 0 {
		return "/"
	}
	return "/p/" + strconv.Itoa(j) + ".html"
}

// Web is what Generate wrote.
type Web struct {
	Root  string   // one directory per host address
	Hosts []string // host addresses, in order
	Pages int      // pages in all
	Port  int
}

// Seeds are the hosts' index URLs.
func (w Web) Seeds() []string {
	s := make([]string, len(w.Hosts))
	for i, h := range w.Hosts {
		s[i] = "http://" + h + ":" + strconv.Itoa(w.Port) + "/"
	}
	return s
}

// Generate writes the web under root (created if missing; existing host
// directories are overwritten).
func Generate(root string, o Options) (Web, error) {
	o = o.withDefaults()
	if o.Hosts > maxHosts {
		return Web{}, fmt.Errorf("scaleweb: %d hosts, at most %d", o.Hosts, maxHosts)
	}
	voc := Vocabulary(rand.New(rand.NewPCG(o.Seed, 0x5eed)), 20000)
	w := Web{Root: root, Port: o.Port, Pages: o.Hosts * o.PagesPerHost}
	for i := range o.Hosts {
		ip := HostIP(i)
		w.Hosts = append(w.Hosts, ip)
		if err := writeHost(root, i, o, voc); err != nil {
			return Web{}, err
		}
	}
	return w, nil
}

func writeHost(root string, i int, o Options, voc []string) error {
	r := rand.New(rand.NewPCG(o.Seed, uint64(i)+1))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(voc)-1))
	words := func(n int) string {
		var b strings.Builder
		for k := range n {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(voc[z.Uint64()])
		}
		return b.String()
	}
	ip := HostIP(i)
	dir := filepath.Join(root, ip)
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		return fmt.Errorf("scaleweb: %w", err)
	}
	nav, footer := words(20), words(15)
	for j := range o.PagesPerHost {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body>\n", words(5))
		fmt.Fprintf(&b, "<nav><a href=\"/\">%s</a></nav>\n<main>\n", nav)
		for left := o.Words/2 + r.IntN(o.Words+1); left > 0; {
			n := min(left, 40+r.IntN(41))
			fmt.Fprintf(&b, "<p>%s.</p>\n", words(n))
			left -= n
		}
		b.WriteString("</main>\n<ul>\n")
		for _, c := range []int{2*j + 1, 2*j + 2, r.IntN(o.PagesPerHost), r.IntN(o.PagesPerHost)} {
			if c < o.PagesPerHost && c != j {
				fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", PagePath(c), words(3))
			}
		}
		for range o.CrossLinks {
			if o.Hosts < 2 {
				break
			}
			other := (i + 1 + r.IntN(o.Hosts-1)) % o.Hosts
			fmt.Fprintf(&b, "<li><a href=\"http://%s:%d%s\">%s</a></li>\n",
				HostIP(other), o.Port, PagePath(r.IntN(o.PagesPerHost)), words(3))
		}
		fmt.Fprintf(&b, "</ul>\n<footer>%s</footer>\n</body></html>\n", footer)
		name := filepath.Join(dir, "index.html")
		if j > 0 {
			name = filepath.Join(dir, "p", strconv.Itoa(j)+".html")
		}
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("scaleweb: %w", err)
		}
	}
	return nil
}

// Vocabulary makes n distinct pseudo-words of two to four syllables, of the
// letters a-w and z (no q, x or y: internal/zipfweb's markers are free).
func Vocabulary(r *rand.Rand, n int) []string {
	cons := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "st", "tr"}
	vow := []string{"a", "e", "i", "o", "u", "ai", "ou"}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(cons[r.IntN(len(cons))])
			b.WriteString(vow[r.IntN(len(vow))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
