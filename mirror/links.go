package mirror

import (
	"slices"
)

// MaxLinkHashes bounds the links kept per page for link evidence.
const MaxLinkHashes = 512

// linkHash is 64-bit FNV-1a of a URL: stable across runs (it is stored).
func linkHash(u string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(u); i++ {
		h = (h ^ uint64(u[i])) * 1099511628211
	}
	return h
}

// LinkHashes returns the sorted, distinct hashes of the links of the page at
// pageURL that stay on its origin (at most MaxLinkHashes of them, the first
// ones in document order). They are what a later copy's links are compared
// with (LinkEvidence).
func LinkHashes(pageURL string, links []string) []uint64 {
	o := originOf(pageURL)
	var out []uint64
	for _, l := range links {
		if originOf(l) != o {
			continue
		}
		out = append(out, linkHash(l))
		if len(out) == MaxLinkHashes {
			break
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LinkEvidence compares the links of a copy P (at copyURL) with those of its
// original Q (at origURL, whose LinkHashes are orig): the links of P on its
// own origin are mapped by the prefix mapping the pair implies, and counted
// as matched when Q links to the mapped URL. This is path overlap as Bharat
// and Broder used it, available from a single duplicate pair: on a mirror,
// P's link paths map onto Q's; a page copied into an unrelated site links
// elsewhere. A link outside the mapped prefix matches only if the original has
// the same link (shared navigation of two prefixes on one host).
func LinkEvidence(copyURL, origURL string, links []string, orig []uint64) (compared, matched int) {
	m, ok := Infer(copyURL, origURL)
	if !ok || m.Identity() {
		return 0, 0
	}
	o := originOf(copyURL)
	seen := make(map[string]bool, len(links))
	for _, l := range links {
		if originOf(l) != o || seen[l] {
			continue
		}
		seen[l] = true
		compared++
		if cp, ok := m.Apply(l); ok {
			if _, found := slices.BinarySearch(orig, linkHash(cp)); found {
				matched++
			}
		} else if _, found := slices.BinarySearch(orig, linkHash(l)); found {
			matched++ // a link both pages share unchanged (site navigation on one host)
		}
		if compared == MaxLinkHashes {
			break
		}
	}
	return compared, matched
}
