package variantweb

import (
	"fmt"
	"hash/fnv"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// each calls f with every page's tree (pages the HTML parser refuses are left as they are).
func (g *gen) each(f func(p *vpage, doc *html.Node)) {
	for _, p := range g.pages {
		if doc := p.tree(); doc != nil {
			f(p, doc)
		}
	}
}

// words returns n words of the site's vocabulary drawn at random.
func (g *gen) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.site.vocab[g.r.IntN(len(g.site.vocab))]
	}
	return strings.Join(ws, " ")
}

// replaceWords gives every word of the text nodes a random word of the vocabulary.
func (g *gen) replaceWords(nodes []*html.Node) {
	for _, t := range nodes {
		t.Data = mapWords(t.Data, func(string) string { return g.site.vocab[g.r.IntN(len(g.site.vocab))] })
	}
}

// entry is the page a crawl of the source starts from: index.html, else the first page.
func (g *gen) entry() *vpage {
	for _, p := range g.pages {
		if p.rel == "index.html" {
			return p
		}
	}
	return g.pages[0]
}

// hrefTo is the relative link from the page at rel to the page at target (both below the prefix).
func hrefTo(rel, target string) string { return relPath("/"+rel, "/"+target) }

func (g *gen) dates() {
	formats := pickFormats(g.r)
	var names []string
	var absolute []dateFormat
	for _, f := range formats {
		names = append(names, f.name)
		if !f.relative {
			absolute = append(absolute, f)
		}
	}
	g.choose("formats", strings.Join(names, ","))
	if len(absolute) == 0 {
		absolute = dateFormats[:1]
	}
	reformat := g.r.IntN(4) != 0
	g.choose("reformat-existing", reformat)
	build := time.Date(2019+g.r.IntN(7), time.Month(1+g.r.IntN(12)), 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60), 0, time.UTC)
	g.each(func(p *vpage, doc *html.Node) {
		f := formats[g.r.IntN(len(formats))]
		age := time.Duration(g.r.Int64N(int64(40 * 24 * time.Hour)))
		stamp := f.format(build.Add(-age), age)
		if reformat {
			rf := absolute[g.r.IntN(len(absolute))]
			for _, t := range textNodes(body(doc), nil) {
				t.Data, _ = reformatDates(t.Data, rf)
			}
		}
		tm := withText(elem(atom.Time, "datetime", build.Add(-age).Format(time.RFC3339)), stamp)
		para := elem(atom.P, "class", "timestamp")
		para.AppendChild(tm)
		if g.r.IntN(2) == 0 {
			body(doc).AppendChild(para)
		} else {
			prepend(body(doc), para)
		}
		p.kind = KindChanged
	})
}

var (
	buildTools = []string{"Sphinx 7.2.6", "Hugo 0.121.1", "DocBook XSL 1.79.2", "Jekyll 4.3.3", "MkDocs 1.5.3", "Asciidoctor 2.0.20"}
	hexDigits  = "0123456789abcdef"
)

func (g *gen) build() {
	var parts []string
	if g.r.IntN(3) != 0 {
		parts = append(parts, fmt.Sprintf("Version %d.%d.%d", g.r.IntN(20), g.r.IntN(30), g.r.IntN(10)))
	}
	if g.r.IntN(2) == 0 {
		n := 7
		if g.r.IntN(2) == 0 {
			n = 40
		}
		h := make([]byte, n)
		for i := range h {
			h[i] = hexDigits[g.r.IntN(16)]
		}
		parts = append(parts, "commit "+string(h))
	}
	if len(parts) == 0 || g.r.IntN(2) == 0 {
		when := time.Date(2019+g.r.IntN(7), time.Month(1+g.r.IntN(12)), 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), 0, 0, time.UTC)
		parts = append(parts, fmt.Sprintf("Generated on %s by %s", when.Format("January 2, 2006 15:04"), buildTools[g.r.IntN(len(buildTools))]))
	}
	footer := strings.Join(parts, " · ")
	g.choose("footer", footer)
	g.each(func(p *vpage, doc *html.Node) {
		div := elem(atom.Div, "class", "build-info")
		div.AppendChild(withText(elem(atom.P), footer))
		body(doc).AppendChild(div)
		p.kind = KindChanged
	})
}

var (
	navTexts = []string{"Downloads", "Mirror status", "Contact", "Search", "Mailing lists", "Report a bug", "Release notes", "Community", "Donate", "Security"}
	renames  = map[string]string{"Prev": "Previous", "Next": "Next page", "Up": "Parent", "Home": "Start",
		"Documentation": "Docs", "Docs": "Documentation", "Blog": "News", "Downloads": "Get it",
		"Community": "Get involved", "About": "About us", "Getting Started": "Quickstart", "Contents": "Table of contents"}
)

// navOf is the page's navigation: the first template element holding a link.
func navOf(b *html.Node) *html.Node {
	return find(b, func(n *html.Node) bool {
		return isTemplate(n) && find(n, isTag(atom.A)) != nil
	})
}

func (g *gen) nav() {
	add := 1 + g.r.IntN(3)
	texts := slices.Clone(navTexts)
	g.r.Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
	texts = texts[:add]
	targets := make([]string, add)
	for i := range targets {
		targets[i] = g.pages[g.r.IntN(len(g.pages))].rel
	}
	remove := g.r.IntN(2) == 0
	rename := g.r.IntN(2) == 0
	g.choose("added", strings.Join(texts, ","))
	g.choose("remove-last", remove)
	g.choose("rename", rename)
	g.each(func(p *vpage, doc *html.Node) {
		b := body(doc)
		nav := navOf(b)
		if nav == nil {
			nav = elem(atom.Nav, "class", "site-nav")
			prepend(b, nav)
		}
		links := findAll(nav, isTag(atom.A))
		if rename {
			for _, a := range links {
				if a.FirstChild != nil && a.FirstChild == a.LastChild && a.FirstChild.Type == html.TextNode {
					if to, ok := renames[strings.TrimSpace(a.FirstChild.Data)]; ok {
						a.FirstChild.Data = to
					}
				}
			}
		}
		if remove && len(links) >= 3 {
			last := links[len(links)-1]
			if li := last.Parent; li != nil && li.DataAtom == atom.Li && find(li, isTag(atom.A)) == last {
				li.Parent.RemoveChild(li)
			} else {
				last.Parent.RemoveChild(last)
			}
		}
		into := find(nav, isTag(atom.Ul))
		for i, t := range texts {
			a := link(hrefTo(p.rel, targets[i]), t)
			if into != nil {
				li := elem(atom.Li)
				li.AppendChild(a)
				into.AppendChild(li)
			} else {
				nav.AppendChild(text(" "))
				nav.AppendChild(a)
			}
		}
		p.kind = KindChanged
	})
}

// sectionLike reports whether n is one section of a page's content.
func sectionLike(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if n.DataAtom == atom.Section || n.DataAtom == atom.Article {
		return true
	}
	c := strings.ToLower(attr(n, "class"))
	return n.DataAtom == atom.Div && (strings.Contains(c, "sect") || strings.Contains(c, "section"))
}

// sectionGroups finds the longest run of sibling sections of the page (each group is a
// run of nodes to move together), else the groups started by the headings of one level
// under one parent. It returns nil when the page has fewer than two.
func sectionGroups(b *html.Node) [][]*html.Node {
	var best [][]*html.Node
	for _, parent := range append([]*html.Node{b}, findAll(b, func(*html.Node) bool { return true })...) {
		var run [][]*html.Node
		for c := parent.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case sectionLike(c):
				run = append(run, []*html.Node{c})
			case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "" && len(run) > 0:
				run[len(run)-1] = append(run[len(run)-1], c)
			default:
				if len(run) > len(best) {
					best = run
				}
				run = nil
			}
		}
		if len(run) > len(best) {
			best = run
		}
	}
	if len(best) >= 2 {
		return best
	}
	for _, h := range []atom.Atom{atom.H2, atom.H3, atom.H4} {
		for _, parent := range append([]*html.Node{b}, findAll(b, func(*html.Node) bool { return true })...) {
			var groups [][]*html.Node
			for c := parent.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.DataAtom == h {
					groups = append(groups, nil)
				}
				if len(groups) > 0 {
					groups[len(groups)-1] = append(groups[len(groups)-1], c)
				}
			}
			if len(groups) > len(best) {
				best = groups
			}
		}
		if len(best) >= 2 {
			return best
		}
	}
	return nil
}

func (g *gen) reorder() {
	g.each(func(p *vpage, doc *html.Node) {
		groups := sectionGroups(body(doc))
		if len(groups) < 2 {
			return
		}
		perm := g.r.Perm(len(groups))
		if slices.IsSorted(perm) {
			perm[0], perm[1] = perm[1], perm[0]
		}
		first := groups[0][0]
		last := groups[len(groups)-1][len(groups[len(groups)-1])-1]
		parent, after := first.Parent, last.NextSibling
		for _, grp := range groups {
			for _, n := range grp {
				parent.RemoveChild(n)
			}
		}
		for _, i := range perm {
			for _, n := range groups[i] {
				parent.InsertBefore(n, after)
			}
		}
		p.kind = KindChanged
	})
}

// swapTags are inline elements with an equivalent of other markup.
var swapTags = map[atom.Atom]atom.Atom{atom.B: atom.Strong, atom.Strong: atom.B, atom.I: atom.Em, atom.Em: atom.I, atom.Tt: atom.Code}

// blockSpacing are elements between two of which white space is never text.
var blockSpacing = map[atom.Atom]bool{atom.Div: true, atom.P: true, atom.Ul: true, atom.Ol: true, atom.Li: true,
	atom.Section: true, atom.Article: true, atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Table: true,
	atom.Blockquote: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Hr: true}

func (g *gen) markup() {
	var swap, classes, attrs, space bool
	for !swap && !classes && !attrs && !space {
		swap, classes, attrs, space = g.r.IntN(2) == 0, g.r.IntN(2) == 0, g.r.IntN(2) == 0, g.r.IntN(2) == 0
	}
	g.choose("tags", swap)
	g.choose("classes", classes)
	g.choose("attributes", attrs)
	g.choose("whitespace", space)
	salt := fmt.Sprintf("m%d", g.r.IntN(1000))
	g.each(func(p *vpage, doc *html.Node) {
		var walk func(n *html.Node, depth int, pre bool)
		walk = func(n *html.Node, depth int, pre bool) {
			if n.Type == html.ElementNode {
				if to, ok := swapTags[n.DataAtom]; ok && swap && n.Namespace == "" {
					n.DataAtom, n.Data = to, to.String()
				}
				if classes {
					if c := attr(n, "class"); c != "" {
						f := strings.Fields(c)
						for i := range f {
							f[i] = salt + "-" + f[i]
						}
						setAttr(n, "class", strings.Join(f, " "))
					}
				}
				if attrs && len(n.Attr) > 1 {
					slices.Reverse(n.Attr)
				}
				if attrs && g.r.IntN(8) == 0 {
					n.Attr = append(n.Attr, html.Attribute{Key: "data-" + salt, Val: fmt.Sprint(g.r.IntN(100))})
				}
				switch n.DataAtom {
				case atom.Pre, atom.Textarea, atom.Script, atom.Style, atom.Title, atom.Listing, atom.Xmp, atom.Plaintext:
					pre = true
				}
			}
			if space && !pre && n.Type == html.ElementNode && blockSpacing[n.DataAtom] {
				if prev := n.PrevSibling; prev != nil && prev.Type == html.ElementNode && blockSpacing[prev.DataAtom] {
					n.Parent.InsertBefore(text("\n"+strings.Repeat("  ", min(depth, 10))), n)
				}
			}
			if space && !pre && n.Type == html.TextNode {
				n.Data = respace(n.Data, "\n"+strings.Repeat("  ", min(depth, 10)))
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c, depth+1, pre)
			}
		}
		walk(doc, 0, false)
		if attrs {
			prepend(body(doc), &html.Node{Type: html.CommentNode, Data: " mirrored page, markup " + salt + " "})
		}
		p.kind = KindChanged
	})
}

// respace turns every run of ASCII white space holding a newline or two spaces into
// the separator sep; single spaces and tabs stay (the text is the same either way).
func respace(s, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if !isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if run := s[i:j]; strings.ContainsAny(run, "\n\r") || len(run) > 1 {
			b.WriteString(sep)
		} else {
			b.WriteString(run)
		}
		i = j
	}
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// subset keeps a fraction of the pages, met by a random walk from the entry page so
// that the kept pages link each other.
func (g *gen) subset() {
	frac := 0.1 + 0.8*g.r.Float64()
	n := max(1, int(math.Round(frac*float64(len(g.pages)))))
	removeLinks := g.r.IntN(2) == 0
	g.v.Dangling = !removeLinks
	g.choose("fraction", fmt.Sprintf("%.2f", frac))
	g.choose("remove-links", removeLinks)
	byRel := make(map[string]*vpage, len(g.pages))
	for _, p := range g.pages {
		byRel[p.rel] = p
	}
	site := g.site
	entry := g.entry()
	keep := map[string]bool{entry.rel: true}
	queue := []*vpage{entry}
	for len(queue) > 0 && len(keep) < n {
		i := g.r.IntN(len(queue))
		p := queue[i]
		queue = slices.Delete(queue, i, i+1)
		for _, t := range g.siteLinks(p) {
			if len(keep) >= n {
				break
			}
			if q := byRel[t]; q != nil && !keep[t] {
				keep[t] = true
				queue = append(queue, q)
			}
		}
	}
	for _, i := range g.r.Perm(len(g.pages)) {
		if len(keep) >= n {
			break
		}
		keep[g.pages[i].rel] = true
	}
	g.pages = slices.DeleteFunc(g.pages, func(p *vpage) bool { return !keep[p.rel] })
	if !removeLinks {
		return
	}
	g.each(func(p *vpage, doc *html.Node) {
		base := site.pageURL(p.rel)
		for _, a := range findAll(doc, func(n *html.Node) bool { return linkAttrs[n.Data] != "" && n.Namespace == "" }) {
			t, ok := siteRel(base, attr(a, linkAttrs[a.Data]), site.Host, site.Prefix)
			if !ok || byRel[t] == nil || keep[t] {
				continue
			}
			if a.DataAtom == atom.A {
				unwrap(a) // the text stays
			} else {
				a.Parent.RemoveChild(a)
			}
		}
	})
}

// siteLinks are the pages of the site that p links to, in a random order.
func (g *gen) siteLinks(p *vpage) []string {
	base := g.site.pageURL(p.rel)
	var out []string
	for _, h := range hrefs(p.src.Body) {
		if t, ok := siteRel(base, h, g.site.Host, g.site.Prefix); ok {
			out = append(out, t)
		}
	}
	g.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (g *gen) superset() {
	share := 0.1 + 0.4*g.r.Float64()
	m := max(1, int(math.Round(share*float64(len(g.pages)))))
	g.choose("added", m)
	orig := slices.Clone(g.pages)
	taken := make(map[string]bool, len(g.pages))
	for _, p := range g.pages {
		taken[p.rel] = true
	}
	var added []*vpage
	var titles []string
	for k := 0; len(added) < m && k < 10*m; k++ {
		tp := orig[g.r.IntN(len(orig))]
		doc := parseHTML(tp.src.Body)
		if doc == nil {
			continue
		}
		slug := strings.ReplaceAll(g.words(2), " ", "-")
		rel := path.Join(path.Dir(tp.rel), slug+".html")
		if path.Dir(tp.rel) == "." {
			rel = slug + ".html"
		}
		if taken[rel] {
			continue
		}
		taken[rel] = true
		title := capitalize(g.words(2 + g.r.IntN(3)))
		setTitle(doc, title)
		g.replaceWords(textNodes(body(doc), isTemplate))
		// a page of its own even where the template holds most of the text
		into := find(body(doc), func(n *html.Node) bool { return n.DataAtom == atom.Main || n.DataAtom == atom.Article })
		if into == nil {
			into = body(doc)
		}
		for range 2 + g.r.IntN(3) {
			into.AppendChild(withText(elem(atom.P), capitalize(g.words(60+g.r.IntN(60)))+"."))
		}
		added = append(added, &vpage{rel: rel, doc: doc, kind: KindAdded})
		titles = append(titles, title)
	}
	// The entry page lists every new page; each new page is also linked from one other page.
	entry := g.entry()
	if doc := entry.tree(); doc != nil {
		ul := elem(atom.Ul, "class", "new-pages")
		for i, a := range added {
			li := elem(atom.Li)
			li.AppendChild(link(hrefTo(entry.rel, a.rel), titles[i]))
			ul.AppendChild(li)
		}
		body(doc).AppendChild(ul)
		entry.kind = KindChanged
	}
	for i, a := range added {
		p := orig[g.r.IntN(len(orig))]
		if doc := p.tree(); doc != nil {
			para := elem(atom.P, "class", "see-also")
			para.AppendChild(link(hrefTo(p.rel, a.rel), titles[i]))
			body(doc).AppendChild(para)
			p.kind = KindChanged
		}
	}
	g.pages = append(g.pages, added...)
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// paragraphs are the content paragraphs of a page with at least minWords words.
func paragraphs(doc *html.Node, minWords int) []*html.Node {
	return findAll(body(doc), func(n *html.Node) bool {
		if n.DataAtom != atom.P {
			return false
		}
		for a := n; a != nil; a = a.Parent {
			if a.Type == html.ElementNode && isTemplate(a) {
				return false
			}
		}
		words := 0
		for _, t := range textNodes(n, nil) {
			words += len(strings.Fields(t.Data))
		}
		return words >= minWords
	})
}

func (g *gen) updated() {
	share := 0.01 + 0.04*g.r.Float64()
	n := max(1, int(math.Round(share*float64(len(g.pages)))))
	g.choose("updated", n)
	done := 0
	for _, i := range g.r.Perm(len(g.pages)) {
		if done == n {
			break
		}
		p := g.pages[i]
		doc := parseHTML(p.src.Body)
		if doc == nil {
			continue
		}
		ps := paragraphs(doc, 12)
		if len(ps) == 0 {
			continue
		}
		para := ps[g.r.IntN(len(ps))]
		words := 0
		for _, t := range textNodes(para, nil) {
			words += len(strings.Fields(t.Data))
		}
		for para.FirstChild != nil {
			para.RemoveChild(para.FirstChild)
		}
		para.AppendChild(text(capitalize(g.words(words)) + "."))
		p.doc, p.kind = doc, KindUpdated
		done++
	}
}

var (
	bannerOrgs  = []string{"the University Computing Service", "Example Networks", "OpenMirror e.V.", "the Free Software Archive", "NorthNet"}
	bannerTexts = []string{
		"This is a mirror of %[1]s, provided as a courtesy by %[2]s. It is synchronised every %[3]d hours; the original is at %[4]s.",
		"You are viewing an archived copy of %[1]s hosted by %[2]s. The current version lives at %[4]s.",
		"Notice: this site is a community mirror run by %[2]s. Content may be up to %[3]d hours out of date.",
	}
)

func (g *gen) banner() {
	s := fmt.Sprintf(bannerTexts[g.r.IntN(len(bannerTexts))], "http://"+g.site.Host+g.site.Prefix,
		bannerOrgs[g.r.IntN(len(bannerOrgs))], 1+g.r.IntN(24), "http://"+g.site.Host+g.site.Prefix)
	g.choose("banner", s)
	g.each(func(p *vpage, doc *html.Node) {
		div := elem(atom.Div, "class", "mirror-banner", "role", "note")
		div.AppendChild(withText(elem(atom.P), s))
		prepend(body(doc), div)
		p.kind = KindChanged
	})
}

// lexicon is the target language of the translated family: every English word maps to
// one of these, always the same one.
var lexicon = strings.Fields(`der die das und ist nicht mit von für auf eine einer werden wird kann
	können sind oder wenn auch nach bei über unter diese dieser dieses alle keine Datei Dateien Befehl
	Befehle Beispiel Wert Werte Tabelle Spalte Zeile Seite Seiten Benutzer Anfrage Ergebnis Fehler
	Option Optionen Verzeichnis Rechner Sitzung Daten Funktion Funktionen Eintrag Schlüssel Zeichen
	Ausgabe Eingabe ändern löschen erstellen anzeigen verwenden zurück weiter oben unten immer selten
	zwischen gegen ohne durch während jedoch sowie bereits nur noch schon sehr mehr weniger Fall
	Beschreibung Hinweis Abschnitt Kapitel Inhalt Übersicht Einleitung Verwendung Rückgabe Standard
	Zeitpunkt Versionen Paket Pakete Quelle Ziel Pfad Liste Typ Format Modus Zugriff Rechte Gruppe`)

func translate(w string) string {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(w)))
	t := lexicon[h.Sum32()%uint32(len(lexicon))]
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
		return capitalize(t)
	}
	return t
}

func (g *gen) translated() {
	share := 0.1 + 0.2*g.r.Float64()
	n := max(1, int(math.Round(share*float64(len(g.pages)))))
	g.choose("translated", n)
	for _, i := range g.r.Perm(len(g.pages))[:n] {
		p := g.pages[i]
		doc := p.tree()
		if doc == nil {
			continue
		}
		for _, t := range textNodes(body(doc), nil) {
			t.Data = mapWords(t.Data, translate)
		}
		if tt := find(doc, isTag(atom.Title)); tt != nil && tt.FirstChild != nil {
			tt.FirstChild.Data = mapWords(tt.FirstChild.Data, translate)
		}
		if h := find(doc, isTag(atom.Html)); h != nil {
			setAttr(h, "lang", "de")
		}
		p.kind = KindTranslated
	}
}

// version edits runs of words in every page until the expected Jaccard similarity with
// the source reaches a target drawn around 0.88: another version of the same docs.
func (g *gen) version() {
	const w = 5 // dedup's default shingle width: an edit of L words changes about L+w-1 shingles
	g.each(func(p *vpage, doc *html.Node) {
		target := min(0.935, max(0.80, 0.88+0.035*g.r.NormFloat64()))
		nodes := textNodes(body(doc), isTemplate)
		total := 0
		for _, t := range nodes {
			total += len(strings.Fields(t.Data))
		}
		if total == 0 {
			return
		}
		// J = (n-c)/(n+c) when c of the page's n shingles are replaced
		budget := (1 - target) / (1 + target) * float64(len(p.src.shingles))
		for spent := 0.0; spent < budget; {
			// a word at random, weighted by the text nodes' lengths
			k := g.r.IntN(total)
			var t *html.Node
			for _, c := range nodes {
				n := len(strings.Fields(c.Data))
				if k < n {
					t = c
					break
				}
				k -= n
			}
			if t == nil {
				break
			}
			f := strings.Fields(t.Data)
			l := min(len(f)-k, 2+g.r.IntN(9))
			lead := t.Data[:len(t.Data)-len(strings.TrimLeft(t.Data, " \t\r\n\f"))]
			trail := t.Data[len(strings.TrimRight(t.Data, " \t\r\n\f")):]
			repl := strings.Fields(g.words(l))
			f = slices.Concat(f[:k], repl, f[k+l:])
			t.Data = lead + strings.Join(f, " ") + trail
			spent += float64(l + w - 1)
		}
		p.kind = KindChanged
	})
}

// template keeps the template (navigation, header, footer) and gives the content and the
// title other words: another site built with the same theme.
func (g *gen) template() {
	g.each(func(p *vpage, doc *html.Node) {
		g.replaceWords(textNodes(body(doc), isTemplate))
		if tt := find(doc, isTag(atom.Title)); tt != nil && tt.FirstChild != nil {
			tt.FirstChild.Data = capitalize(g.words(1 + len(strings.Fields(tt.FirstChild.Data))))
		}
		p.kind = KindChanged
	})
}
