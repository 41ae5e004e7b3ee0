// Package mirror finds mirrors by path overlap (Bharat and Broder): Host1/a/p
// and Host2/b/p holding the same content for most paths p. It infers prefix
// mappings from duplicate page pairs and maps URLs across them, so the crawl
// can skip the copy of a page whose counterpart on the original is known.
//
// The package is pure: URLs in, decisions out; no network and no disk.
package mirror

import (
	"net/url"
	"strings"
)

// Mapping maps the URL space under one origin+prefix onto another: a URL
// FromOrigin+FromPrefix+rest corresponds to ToOrigin+ToPrefix+rest.
type Mapping struct {
	FromOrigin string // scheme://host[:port] of the copy
	FromPrefix string // path prefix on the copy, starting and ending with "/"
	ToOrigin   string // scheme://host[:port] of the original
	ToPrefix   string // path prefix on the original
	// FromExt and ToExt map file names when one side serves its pages
	// without the other's extension (extensionless URLs): "a" on a copy
	// with FromExt "" and ToExt ".html" is "a.html" on the original, and
	// the reverse mapping has FromExt ".html" and ToExt "". Both empty: file
	// names map unchanged. Directories ("dir/") map unchanged either way.
	FromExt, ToExt string
}

// SameHost reports whether the mapping stays on one origin (replicated
// prefixes of one site, rather than a mirror across hosts).
func (m Mapping) SameHost() bool { return m.FromOrigin == m.ToOrigin }

// Identity reports whether the mapping maps every URL onto itself.
func (m Mapping) Identity() bool {
	return m.SameHost() && m.FromPrefix == m.ToPrefix && m.FromExt == m.ToExt
}

// htmlExts are the file-name extensions a site may drop from its URLs.
var htmlExts = []string{".html", ".htm"}

// extPair reports whether file names a and b differ only by an HTML
// extension that one of them has, and which side has it.
func extPair(a, b string) (aExt, bExt string, ok bool) {
	for _, ext := range htmlExts {
		switch {
		case a != "" && a == b+ext && b != "":
			return ext, "", true
		case b != "" && b == a+ext && a != "":
			return "", ext, true
		}
	}
	return "", "", false
}

// Infer derives the mapping implied by the page at dup being a copy of the
// page at orig: the longest common trailing run of path segments is the part
// p that both share, and what precedes it on each side is the prefix. A
// trailing "index.html" (or index.htm) counts as the directory itself, so
// /a/index.html and /b/ give the prefixes /a/ and /b/.
func Infer(dup, orig string) (Mapping, bool) {
	du, err1 := url.Parse(dup)
	ou, err2 := url.Parse(orig)
	if err1 != nil || err2 != nil || du.Host == "" || ou.Host == "" {
		return Mapping{}, false
	}
	ds := segments(dirForm(du.EscapedPath()))
	os := segments(dirForm(ou.EscapedPath()))
	// Common suffix, by segment. The last segment (the file name, "" for a
	// directory) must agree, or the two pages share no path p at all.
	// A file name with and without an HTML extension ("a.html" and "a":
	// a copy served with extensionless URLs) is the same file.
	var fromExt, toExt string
	n := 0
	if len(ds) > 0 && len(os) > 0 {
		if fe, te, ok := extPair(ds[len(ds)-1], os[len(os)-1]); ok {
			fromExt, toExt, n = fe, te, 1
		}
	}
	for n < len(ds) && n < len(os) && ds[len(ds)-1-n] == os[len(os)-1-n] {
		n++
	}
	if n == 0 {
		return Mapping{}, false
	}
	m := Mapping{
		FromOrigin: du.Scheme + "://" + du.Host,
		FromPrefix: "/" + joinDir(ds[:len(ds)-n]),
		ToOrigin:   ou.Scheme + "://" + ou.Host,
		ToPrefix:   "/" + joinDir(os[:len(os)-n]),
		FromExt:    fromExt,
		ToExt:      toExt,
	}
	return m, true
}

// Apply maps u (a canonical absolute URL) onto the original. ok is false when
// u is not under the mapping's FromOrigin+FromPrefix.
func (m Mapping) Apply(u string) (string, bool) {
	head := m.FromOrigin + m.FromPrefix
	if !strings.HasPrefix(u, head) {
		// The prefix directory itself without its trailing slash.
		if u == strings.TrimSuffix(head, "/") && m.FromPrefix != "/" {
			return strings.TrimSuffix(m.ToOrigin+m.ToPrefix, "/"), true
		}
		return "", false
	}
	rest := u[len(head):]
	if m.FromExt != m.ToExt {
		path, query, hasQuery := strings.Cut(rest, "?")
		rest = m.mapName(path)
		if hasQuery {
			rest += "?" + query
		}
	}
	return m.ToOrigin + m.ToPrefix + rest, true
}

// mapName maps the file name at the end of path by the mapping's extensions:
// a directory, or a name that does not have the copy's form (another
// extension), stays as it is.
func (m Mapping) mapName(path string) string {
	name := path[strings.LastIndexByte(path, '/')+1:]
	switch {
	case name == "":
		return path
	case m.FromExt != "":
		if base, ok := strings.CutSuffix(path, m.FromExt); ok && !strings.HasSuffix(base, "/") {
			return base + m.ToExt
		}
		return path
	case strings.Contains(name, "."):
		return path // an extension of its own (a.png): not an extensionless page
	}
	return path + m.ToExt
}

// ExtAlternates returns the other forms of URL u's file name that a site
// with or without extensionless URLs may use: "a" -> "a.html", "a.htm";
// "a.html" -> "a". A directory, or a name with another extension, has none.
func ExtAlternates(u string) []string {
	path, query, hasQuery := strings.Cut(u, "?")
	name := path[strings.LastIndexByte(path, '/')+1:]
	var out []string
	switch {
	case name == "":
		return nil
	case !strings.Contains(name, "."):
		for _, ext := range htmlExts {
			out = append(out, path+ext)
		}
	default:
		for _, ext := range htmlExts {
			if base, ok := strings.CutSuffix(path, ext); ok && !strings.HasSuffix(base, "/") {
				out = append(out, base)
			}
		}
	}
	if hasQuery {
		for i := range out {
			out[i] += "?" + query
		}
	}
	return out
}

// fileNamed reports whether URL u names a file, not a directory (an index
// page counts as its directory).
func fileNamed(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	p := dirForm(pu.EscapedPath())
	return p != "" && !strings.HasSuffix(p, "/")
}

// dirForm turns ".../index.html" into ".../".
func dirForm(p string) string {
	if p == "" {
		return "/"
	}
	for _, idx := range []string{"index.html", "index.htm"} {
		if strings.HasSuffix(p, "/"+idx) {
			return p[:len(p)-len(idx)]
		}
	}
	return p
}

// segments splits a path into its segments; a path ending in "/" has an
// empty last segment (the directory's own page).
func segments(p string) []string {
	p = strings.TrimPrefix(p, "/")
	return strings.Split(p, "/")
}

func joinDir(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "/") + "/"
}
