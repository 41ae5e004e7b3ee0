package variantweb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// vpage is a variant page while it is built, in source coordinates: rel is where the
// page would be below the source's prefix, and its links are written as on the source.
type vpage struct {
	rel  string
	src  *SourcePage // nil for an added page
	doc  *html.Node  // the edited tree; nil: the source's bytes
	kind Kind
}

// tree returns the page's tree, parsing the source's bytes on first use.
func (p *vpage) tree() *html.Node {
	if p.doc == nil {
		p.doc = parseHTML(p.src.Body)
	}
	return p.doc
}

type gen struct {
	site *Site
	fam  Family
	r    *rand.Rand
	v    *Variant
	opt  Options

	dirSlash, indexHTML bool // link style of index pages: "dir/", "dir/index.html"; neither: as written
	pages               []*vpage
}

// choose records a choice of the seed.
func (g *gen) choose(name string, value any) {
	g.v.Choices = append(g.v.Choices, fmt.Sprintf("%s=%v", name, value))
}

// location kinds.
const (
	locOtherHost       = "other-host"
	locOtherHostPrefix = "other-host-prefix"
	locSameHostPrefix  = "same-host-prefix"
)

func (g *gen) locate(kinds ...string) {
	if g.site.Prefix == "/" { // another prefix of "/" would lie inside the source
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == locSameHostPrefix })
	}
	k := kinds[g.r.IntN(len(kinds))]
	g.v.Host, g.v.Prefix = g.opt.Host, g.site.Prefix
	switch k {
	case locOtherHostPrefix, locSameHostPrefix:
		g.v.Prefix = g.otherPrefix()
	}
	if k == locSameHostPrefix {
		g.v.Host, g.v.SameHost = g.site.Host, true
	}
	g.choose("location", k)
	g.choose("at", g.v.Host+g.v.Prefix)
}

// otherPrefix is a mirror's prefix for the source's.
func (g *gen) otherPrefix() string {
	name := path.Base(strings.TrimSuffix(g.site.Prefix, "/"))
	if name == "." || name == "/" || name == "" {
		name = "site"
	}
	switch g.r.IntN(3) {
	case 0:
		return "/mirror" + g.site.Prefix
	case 1:
		return "/pub/mirrors/" + name + "/"
	default:
		return "/mirror/v" + strconv.Itoa(2+g.r.IntN(8)) + "/"
	}
}

// nextVersion bumps the last number of the prefix ("/docs/15/" to "/docs/16/"), or puts
// "/v2" before a prefix without one.
func nextVersion(prefix string) string {
	end := strings.LastIndexFunc(prefix, func(r rune) bool { return r >= '0' && r <= '9' })
	if end < 0 {
		return "/v2" + prefix
	}
	start := end
	for start > 0 && prefix[start-1] >= '0' && prefix[start-1] <= '9' {
		start--
	}
	n, _ := strconv.Atoi(prefix[start : end+1])
	return prefix[:start] + strconv.Itoa(n+1) + prefix[end+1:]
}

func (g *gen) run() error {
	for i := range g.site.Pages {
		sp := &g.site.Pages[i]
		g.pages = append(g.pages, &vpage{rel: sp.Rel, src: sp, kind: KindCopy})
	}
	switch g.fam {
	case FamilyLayout:
		g.locate(locOtherHost, locOtherHostPrefix, locSameHostPrefix)
		switch g.r.IntN(3) {
		case 1:
			g.dirSlash = true
			g.choose("index-links", "dir/")
		case 2:
			g.indexHTML = true
			g.choose("index-links", "dir/index.html")
		default:
			g.choose("index-links", "as-written")
		}
		g.v.Extensionless = g.r.IntN(2) == 0
		g.choose("extensionless", g.v.Extensionless)
	case FamilyVersion:
		if g.site.Prefix != "/" && g.r.IntN(2) == 0 {
			g.v.Host, g.v.Prefix, g.v.SameHost = g.site.Host, nextVersion(g.site.Prefix), true
		} else {
			g.v.Host, g.v.Prefix = g.opt.Host, nextVersion(g.site.Prefix)
		}
		g.choose("at", g.v.Host+g.v.Prefix)
	case FamilyTemplate:
		g.v.Host, g.v.Prefix = g.opt.Host, g.site.Prefix
		g.choose("at", g.v.Host+g.v.Prefix)
	case FamilyTranslated:
		g.v.Host, g.v.Prefix = g.opt.Host, g.site.Prefix
		if g.r.IntN(2) == 0 {
			g.v.Prefix = "/de" + g.site.Prefix
		}
		g.choose("at", g.v.Host+g.v.Prefix)
	default:
		g.locate(locOtherHost, locOtherHostPrefix)
	}
	if err := g.family(); err != nil {
		return err
	}
	return g.finish()
}

// family applies the family's rule to g.pages.
func (g *gen) family() error {
	switch g.fam {
	case FamilyDates:
		g.dates()
	case FamilyBuild:
		g.build()
	case FamilyNav:
		g.nav()
	case FamilyReorder:
		g.reorder()
	case FamilyMarkup:
		g.markup()
	case FamilyLayout:
		// the layout is the whole change
	case FamilySubset:
		g.subset()
	case FamilySuperset:
		g.superset()
	case FamilyUpdated:
		g.updated()
	case FamilyBanner:
		g.banner()
	case FamilyTranslated:
		g.translated()
	case FamilyVersion:
		g.version()
	case FamilyTemplate:
		g.template()
	}
	return nil
}

// finish renders the pages, rewrites their links to the variant's layout and computes
// the ground truth.
func (g *gen) finish() error {
	v := g.v
	in := make(map[string]bool, len(g.pages))
	for _, p := range g.pages {
		in[p.rel] = true
	}
	for _, sp := range g.site.Pages {
		if !in[sp.Rel] {
			v.Missing = append(v.Missing, g.site.Path(sp.Rel))
		}
	}
	for _, p := range g.pages {
		body := []byte(nil)
		if p.doc != nil {
			var b bytes.Buffer
			if err := html.Render(&b, p.doc); err != nil {
				return fmt.Errorf("variantweb: render %s: %w", p.rel, err)
			}
			body = b.Bytes()
		} else {
			body = p.src.Body
		}
		pagePath := v.Prefix + g.linkForm(p.rel, indexDir(p.rel))
		body = g.rewriteLinks(body, p.rel, pagePath)
		pg := Page{Path: pagePath, File: strings.TrimPrefix(v.Prefix+p.rel, "/"), Body: body, Kind: p.kind}
		if p.src != nil {
			pg.Source = g.site.Path(p.src.Rel)
			if p.doc == nil {
				pg.J = 1 // the source's text: only links may differ
			} else {
				sh, _, err := shingleText(body, "http://"+v.Host+pagePath)
				if err != nil {
					return err
				}
				pg.J = Jaccard(sh, p.src.shingles)
			}
		}
		v.Pages = append(v.Pages, pg)
	}
	slices.SortFunc(v.Pages, func(a, b Page) int { return strings.Compare(a.Path, b.Path) })
	v.byPath = make(map[string]int, 2*len(v.Pages))
	for i, pg := range v.Pages {
		v.byPath[pg.Path] = i
		v.byPath["/"+pg.File] = i
	}
	return nil
}

// indexDir is how the source links an index page by default: "dir/" (or "" at the prefix).
func indexDir(rel string) string {
	if path.Base(rel) == "index.html" {
		return strings.TrimSuffix(rel, "index.html")
	}
	return rel
}

// linkForm is the variant's link to the page at file path rel, written on the source as
// rest ("dir/" or "dir/index.html" for an index page).
func (g *gen) linkForm(rel, rest string) string {
	isIndex := path.Base(rel) == "index.html"
	switch {
	case isIndex && g.dirSlash:
		return strings.TrimSuffix(rel, "index.html")
	case isIndex && g.indexHTML:
		return rel
	case !isIndex && g.v.Extensionless && strings.HasSuffix(rel, ".html"):
		return strings.TrimSuffix(rel, ".html")
	case isIndex && g.v.Extensionless:
		return strings.TrimSuffix(rel, "index.html") // "dir/index" would not be served
	}
	return rest
}

// linkAttrs are the attributes holding links that parse.Parse follows.
var linkAttrs = map[string]string{"a": "href", "area": "href", "link": "href", "iframe": "src", "frame": "src"}

// rewriteLinks maps every link of body to a page of the site onto the variant's layout.
// Tokens it does not change keep their bytes.
func (g *gen) rewriteLinks(body []byte, rel, pagePath string) []byte {
	site, v := g.site, g.v
	srcBase, _ := url.Parse("http://" + site.Host + site.Prefix + rel)
	varBase, _ := url.Parse("http://" + v.Host + pagePath)
	z := html.NewTokenizer(bytes.NewReader(body))
	var out bytes.Buffer
	out.Grow(len(body) + len(body)/16)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		raw := z.Raw()
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			out.Write(raw)
			continue
		}
		raw = slices.Clone(raw)
		tok := z.Token()
		key, ok := linkAttrs[tok.Data]
		changed := false
		for i, a := range tok.Attr {
			if !ok || a.Namespace != "" || a.Key != key {
				continue
			}
			if nv, ch := g.mapHref(srcBase, varBase, a.Val); ch {
				tok.Attr[i].Val = nv
				changed = true
			}
		}
		if changed {
			out.WriteString(tok.String())
		} else {
			out.Write(raw)
		}
	}
	return out.Bytes()
}

// mapHref returns the href for the variant page at varBase of a link written as href
// on the source page at srcBase, and whether it differs from href.
func (g *gen) mapHref(srcBase, varBase *url.URL, href string) (string, bool) {
	ref, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return href, false
	}
	u := srcBase.ResolveReference(ref)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host != g.site.Host {
		return href, false
	}
	want := *u
	if strings.HasPrefix(u.Path, g.site.Prefix) {
		rest := strings.TrimPrefix(u.Path, g.site.Prefix)
		fileRel := rest
		if fileRel == "" || strings.HasSuffix(fileRel, "/") {
			fileRel += "index.html"
		}
		want.Host = g.v.Host
		want.Path = g.v.Prefix + g.linkForm(fileRel, rest)
		want.RawPath = ""
	}
	if varBase.ResolveReference(ref).String() == want.String() {
		return href, false
	}
	var s string
	switch {
	case ref.Scheme != "" || ref.Host != "" || want.Host != g.v.Host:
		s = want.String()
	case strings.HasPrefix(ref.Path, "/"):
		w := want
		w.Scheme, w.Host = "", ""
		s = w.String()
	default:
		w := url.URL{Path: relPath(varBase.Path, want.Path), RawQuery: want.RawQuery, Fragment: want.Fragment}
		s = w.String()
		if w.Path == "" && w.RawQuery == "" && w.Fragment == "" {
			s = "./"
		}
	}
	return s, true
}

// relPath is the relative reference from the page at URL path from to URL path to.
func relPath(from, to string) string {
	fd := strings.Split(from[:strings.LastIndex(from, "/")+1], "/")
	fd = fd[:len(fd)-1] // directory segments, with the leading ""
	ts := strings.Split(to, "/")
	n := 0
	for n < len(fd) && n < len(ts)-1 && fd[n] == ts[n] {
		n++
	}
	s := strings.Repeat("../", len(fd)-n) + strings.Join(ts[n:], "/")
	if s == "" {
		return "./"
	}
	if first, _, _ := strings.Cut(s, "/"); strings.Contains(first, ":") {
		s = "./" + s
	}
	return s
}
