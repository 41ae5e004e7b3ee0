// Package variantweb generates mirrors and near-duplicates of a real site, for tests.
//
// It takes one site of the shared corpus (a host directory and a URL prefix, as
// internal/testweb serves it), and writes a second copy of it, the variant, under another
// host or prefix, transformed by the rule of a Family: dates and times in other formats,
// a build footer, a changed navigation, reordered sections, markup and white space only,
// another URL layout, a subset, a superset, a few updated pages, an injected banner, a
// partial translation; and two families that are not mirrors: another version of the
// docs, and another site on the same template. Every choice (which pages, which formats,
// how much) is drawn from a seed, and the same seed gives the same bytes.
//
// Every variant page carries its ground truth: the source page it copies (none for an
// added page) and the exact Jaccard similarity of their looped shingle sets, computed
// with the project's own tokenizer and shingler (parse.Parse, dedup.Detector.Shingles at
// dedup's default shingle width), and the variant says whether it is a mirror (to be
// detected) or not (never to be reported).
//
// Links inside the variant follow its URL layout: every link to a page of the site is
// rewritten to the variant's host, prefix and link style, in the form it was written in
// (relative, absolute path or absolute URL); other links are left alone. Variant.Write
// lays the source site and the variant out for loopweb.Start; Variant.Handler serves
// extensionless URLs.
package variantweb

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// Family names a rule that turns a site into a variant.
type Family string

// The families. Mirror families are expected to be detected as mirrors of the source;
// FamilyVersion and FamilyTemplate are not mirrors.
const (
	FamilyDates      Family = "dates"      // dates and times stamped or reformatted (numeric, month names, 5 languages, relative)
	FamilyBuild      Family = "build"      // a build footer: version, commit hash, "generated on" line
	FamilyNav        Family = "nav"        // navigation links added, removed, renamed
	FamilyReorder    Family = "reorder"    // sections of a page in another order
	FamilyMarkup     Family = "markup"     // markup and white space only: the text is identical
	FamilyLayout     Family = "layout"     // another host or prefix, dir/ against dir/index.html, extensionless URLs
	FamilySubset     Family = "subset"     // a partial mirror: 10% to 90% of the pages
	FamilySuperset   Family = "superset"   // the copy adds pages of its own
	FamilyUpdated    Family = "updated"    // a paragraph rewritten in 1% to 5% of the pages
	FamilyBanner     Family = "banner"     // a banner injected at the top of every page
	FamilyTranslated Family = "translated" // a language variant: 10% to 30% of the pages translated
	FamilyVersion    Family = "version"    // not a mirror: another version of the docs (median J about 0.88)
	FamilyTemplate   Family = "template"   // not a mirror: another site on the same template
)

// Families lists every family, mirrors first.
func Families() []Family {
	return []Family{FamilyDates, FamilyBuild, FamilyNav, FamilyReorder, FamilyMarkup,
		FamilyLayout, FamilySubset, FamilySuperset, FamilyUpdated, FamilyBanner,
		FamilyTranslated, FamilyVersion, FamilyTemplate}
}

// Mirror reports whether a variant of family f is a mirror of its source.
func (f Family) Mirror() bool { return f != FamilyVersion && f != FamilyTemplate }

func (f Family) valid() bool { return slices.Contains(Families(), f) }

// Kind says what the family did to one variant page.
type Kind string

// Page kinds.
const (
	KindCopy       Kind = "copy"       // the source page, text unchanged (links may be rewritten)
	KindChanged    Kind = "changed"    // the family's rule changed the page (dates, footer, nav, ...)
	KindUpdated    Kind = "updated"    // a paragraph rewritten: new content
	KindTranslated Kind = "translated" // entirely different text: not a duplicate of its source
	KindAdded      Kind = "added"      // a page of the variant only
)

// SourcePage is one page of a Site.
type SourcePage struct {
	Rel  string // file path below the prefix: "sql-select.html", "community/index.html"
	Body []byte

	shingles []uint64 // sorted, distinct
	words    []string // words of the visible text (for new text)
}

// Site is one site of the corpus: the pages under a prefix of one host.
type Site struct {
	Host   string // loopback IP, the host's directory name: "127.0.0.2"
	Prefix string // "/docs/15/"
	Pages  []SourcePage

	byRel map[string]int
	vocab []string // distinct words of the site, sorted
}

// Path returns the URL path of a source page (file form: ".../index.html").
func (s *Site) Path(rel string) string { return s.Prefix + rel }

// Page returns the source page at rel.
func (s *Site) Page(rel string) (*SourcePage, bool) {
	i, ok := s.byRel[rel]
	if !ok {
		return nil, false
	}
	return &s.Pages[i], true
}

// Load reads the HTML pages (.html, .htm) under root/host/prefix. With maxPages > 0 it
// keeps the first maxPages pages met breadth-first from the entry page (prefix
// index.html, else the first page by name) following links in document order, so the
// sample links to itself; pages not reached are added by name when the walk ends early.
func Load(root, host, prefix string, maxPages int) (*Site, error) {
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("variantweb: prefix %q must start and end with /", prefix)
	}
	dir := filepath.Join(root, host, filepath.FromSlash(strings.Trim(prefix, "/")))
	var rels []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(p))
		if d.IsDir() || (ext != ".html" && ext != ".htm") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rels = append(rels, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("variantweb: read site %s%s: %w", host, prefix, err)
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("variantweb: no HTML pages under %s", dir)
	}
	slices.Sort(rels)
	bodies := make(map[string][]byte, len(rels))
	read := func(rel string) ([]byte, error) {
		if b, ok := bodies[rel]; ok {
			return b, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("variantweb: %w", err)
		}
		bodies[rel] = b
		return b, nil
	}
	s := &Site{Host: host, Prefix: prefix}
	keep := rels
	if maxPages > 0 && maxPages < len(rels) {
		keep, err = sample(s, rels, maxPages, read)
		if err != nil {
			return nil, err
		}
	}
	s.byRel = make(map[string]int, len(keep))
	vocab := make(map[string]bool)
	for _, rel := range keep {
		body, err := read(rel)
		if err != nil {
			return nil, err
		}
		sh, text, err := shingleText(body, "http://"+host+prefix+rel)
		if err != nil {
			return nil, err
		}
		p := SourcePage{Rel: rel, Body: body, shingles: sh}
		for w := range strings.FieldsSeq(text) {
			if isWord(w) {
				p.words = append(p.words, w)
				vocab[strings.ToLower(w)] = true
			}
		}
		s.byRel[rel] = len(s.Pages)
		s.Pages = append(s.Pages, p)
	}
	for w := range vocab {
		s.vocab = append(s.vocab, w)
	}
	slices.Sort(s.vocab)
	if len(s.vocab) < 50 {
		return nil, fmt.Errorf("variantweb: site %s%s has too few words (%d)", host, prefix, len(s.vocab))
	}
	return s, nil
}

// isWord reports whether w is a plain word of 3 to 12 ASCII letters.
func isWord(w string) bool {
	if len(w) < 3 || len(w) > 12 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// sample walks the site breadth-first from its entry page.
func sample(s *Site, rels []string, n int, read func(string) ([]byte, error)) ([]string, error) {
	have := make(map[string]bool, len(rels))
	for _, r := range rels {
		have[r] = true
	}
	entry := rels[0]
	if have["index.html"] {
		entry = "index.html"
	}
	seen := map[string]bool{entry: true}
	queue := []string{entry}
	var out []string
	for len(queue) > 0 && len(out) < n {
		rel := queue[0]
		queue = queue[1:]
		out = append(out, rel)
		body, err := read(rel)
		if err != nil {
			return nil, err
		}
		base := s.pageURL(rel)
		for _, href := range hrefs(body) {
			t, ok := siteRel(base, href, s.Host, s.Prefix)
			if ok && have[t] && !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	for _, r := range rels {
		if len(out) >= n {
			break
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out, nil
}

// siteRel resolves href against base and returns the file path below prefix on host it
// names ("" and "dir/" name "index.html" and "dir/index.html").
func siteRel(base *url.URL, href, host, prefix string) (string, bool) {
	ref, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return "", false
	}
	u := base.ResolveReference(ref)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host != host || !strings.HasPrefix(u.Path, prefix) {
		return "", false
	}
	rest := strings.TrimPrefix(u.Path, prefix)
	if rest == "" || strings.HasSuffix(rest, "/") {
		rest += "index.html"
	}
	return rest, true
}

// Options tunes Generate. The zero value is ready to use.
type Options struct {
	// Host is the IP of the variant's host when it is not the source's (default
	// 127.0.0.101). It must be an IPv4 loopback address other than the source's.
	Host string
}

// DefaultHost is the variant's host unless Options.Host says otherwise.
const DefaultHost = "127.0.0.101"

// Validate reports whether o is usable for a site on srcHost.
func (o Options) Validate(srcHost string) error {
	h := o.Host
	if h == "" {
		h = DefaultHost
	}
	if !strings.HasPrefix(h, "127.") || strings.Count(h, ".") != 3 {
		return fmt.Errorf("variantweb: Options.Host %q is not an IPv4 loopback address", h)
	}
	if h == srcHost {
		return fmt.Errorf("variantweb: Options.Host %q is the source's host", h)
	}
	return nil
}

// Page is one page of a variant.
type Page struct {
	Path   string  // URL path on Variant.Host by which the variant links it ("dir/" for an index unless the layout links index.html)
	File   string  // file path below the host's directory, as written by Write
	Body   []byte  //
	Source string  // URL path on Site.Host of the page it copies (file form: ".../index.html"); "" for an added page
	J      float64 // exact Jaccard of the looped shingle sets of Body and Source's page (0 for an added page)
	Kind   Kind
}

// Variant is a generated variant of a site.
type Variant struct {
	Family Family
	Seed   int64
	Mirror bool // a mirror of Site: expected to be detected; false: must never be reported as one
	Site   *Site
	Host   string // the variant's host IP (Site.Host when SameHost)
	Prefix string // the variant's URL prefix
	// SameHost: the variant is another prefix of the source's host (a replicated prefix,
	// which a crawler reports but need not skip).
	SameHost bool
	// Extensionless: pages are linked without ".html"; serve the web with Handler.
	Extensionless bool
	// Dangling: links to pages the variant leaves out are kept (subset family); otherwise
	// every link to a page of the site resolves to a page of the variant.
	Dangling bool
	Missing  []string // source pages (URL paths) that the variant leaves out
	Choices  []string // what the seed chose, "name=value", for messages
	Pages    []Page   // sorted by Path

	byPath map[string]int // Path and "/"+File to the index in Pages; read-only after Generate
}

// Lookup returns the variant page served at URL path p ("dir/" and "dir/index.html" are
// the same page; with Extensionless, "a" is "a.html"). It is safe for concurrent use.
func (v *Variant) Lookup(p string) (*Page, bool) {
	if i, ok := v.byPath[p]; ok {
		return &v.Pages[i], true
	}
	if strings.HasSuffix(p, "/") {
		p += "index.html"
	} else if v.Extensionless && path.Ext(p) == "" {
		p += ".html"
	}
	i, ok := v.byPath[p]
	if !ok {
		return nil, false
	}
	return &v.Pages[i], true
}

// Write lays out the web for loopweb.Start under dir: the source site's pages at
// dir/<Site.Host><Site.Prefix><rel>, byte for byte, and the variant's pages at
// dir/<Host>/<File>. dir may already hold other hosts.
func (v *Variant) Write(dir string) error {
	write := func(host, file string, body []byte) error {
		name := filepath.Join(dir, host, filepath.FromSlash(strings.TrimPrefix(file, "/")))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("variantweb: %w", err)
		}
		if old, err := os.ReadFile(name); err == nil && !bytes.Equal(old, body) {
			return fmt.Errorf("variantweb: %s/%s written twice with different bytes", host, file)
		}
		if err := os.WriteFile(name, body, 0o644); err != nil {
			return fmt.Errorf("variantweb: %w", err)
		}
		return nil
	}
	var errs []error
	for _, p := range v.Site.Pages {
		errs = append(errs, write(v.Site.Host, v.Site.Prefix+p.Rel, p.Body))
	}
	for _, p := range v.Pages {
		errs = append(errs, write(v.Host, p.File, p.Body))
	}
	return errors.Join(errs...)
}

// Handler wraps a host's handler as loopweb.Options.Handler does: on the variant's host,
// an extensionless URL of a variant page is served from its .html file (nginx's
// try_files $uri $uri.html). Other requests pass through.
func (v *Variant) Handler(ip string, next http.Handler) http.Handler {
	if ip != v.Host || !v.Extensionless {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, v.Prefix) && !strings.HasSuffix(p, "/") && path.Ext(p) == "" {
			if pg, ok := v.Lookup(p); ok && pg.Path == p {
				r2 := r.Clone(r.Context())
				r2.URL.Path = "/" + pg.File
				r2.URL.RawPath = ""
				r = r2
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Generate builds the variant of family fam of site src for seed.
func Generate(src *Site, fam Family, seed int64, o Options) (*Variant, error) {
	if !fam.valid() {
		return nil, fmt.Errorf("variantweb: unknown family %q", fam)
	}
	if err := o.Validate(src.Host); err != nil {
		return nil, err
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	h := fnv.New64a()
	h.Write([]byte(fam))
	g := &gen{
		site: src,
		fam:  fam,
		r:    rand.New(rand.NewPCG(uint64(seed), h.Sum64())),
		v:    &Variant{Family: fam, Seed: seed, Mirror: fam.Mirror(), Site: src},
		opt:  o,
	}
	if err := g.run(); err != nil {
		return nil, err
	}
	return g.v, nil
}

// pageURL is the URL of the source page at rel.
func (s *Site) pageURL(rel string) *url.URL {
	return &url.URL{Scheme: "http", Host: s.Host, Path: s.Prefix + rel}
}

// hrefs returns the link targets of a page that parse.Parse follows, as written.
func hrefs(body []byte) []string {
	var out []string
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, more := z.TagName()
		key, ok := linkAttrs[string(name)]
		for ok && more {
			var k, v []byte
			k, v, more = z.TagAttr()
			if string(k) == key {
				out = append(out, string(v))
			}
		}
	}
}
