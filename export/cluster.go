package export

import (
	"strconv"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// A cluster is a connected component of the "is a duplicate of" graph, as in
// Broder's clustering (seed 002, section 2: every pair above the threshold is
// a link in a union-find; the connected components are the clusters). The
// nodes are the store's records, page records and skip records; every
// exact_duplicate, near_duplicate and mirror_skipped record has one edge, to
// the page it names as its original (OriginalID, else the page whose URL or
// final URL is its DuplicateOf; a target with no record of its own is a node
// too, so records naming it share a cluster). A duplicate of a duplicate
// (a mirror copy skipped in favour of a page that is itself a near
// duplicate, say) is therefore in its original's original's cluster.
//
// The representative of a cluster is its unique page: the page whose content
// the crawl kept, the first page of the cluster that was fetched. A cluster
// holds at most one (every other record names one original and a unique page
// names none, so following duplicate_of from any member ends there); should a
// store hold more, the one with the smallest id represents it. A cluster's
// value is its representative's id; a cluster without a unique page (a skip
// record whose counterpart failed or is not fetched yet, an error page) has
// no representative, and its value is the smallest page id in it (or, when
// it holds none, skip records naming a URL without a record, the smallest
// URL in it).

// entry is what clustering needs of one record.
type entry struct {
	id         uint64
	url, final string
	class      string
	dupOf      string
	orig       uint64
	sim        float64
	method     string
}

// clusters is the union-find over the entries (indexes 0..len(entries)-1)
// and the phantom nodes of targets without a record (indexes after them).
type clusters struct {
	entries []entry
	parent  []int
	ids     []uint64 // the id of every node (0 if none: a skip record, a target named by URL only)
	urls    []string // the URL of every node

	rep   map[int]int    // component root -> index of the representative entry
	value map[int]string // component root -> the cluster value
}

func newClusters(entries []entry) *clusters {
	c := &clusters{entries: entries, parent: make([]int, len(entries)), ids: make([]uint64, len(entries)), urls: make([]string, len(entries))}
	byID := make(map[uint64]int, len(entries))
	byURL := make(map[string]int, len(entries))
	for i, e := range entries {
		c.parent[i] = i
		c.ids[i], c.urls[i] = e.id, e.url
		if e.id != 0 {
			if _, ok := byID[e.id]; !ok {
				byID[e.id] = i
			}
		}
	}
	// Page records first (a URL's page record outranks its skip record),
	// then final URLs, then skip records.
	for pass := range 3 {
		for i, e := range entries {
			u := e.url
			switch {
			case pass == 0 && e.id != 0:
			case pass == 1 && e.id != 0 && e.final != "":
				u = e.final
			case pass == 2 && e.id == 0:
			default:
				continue
			}
			if _, ok := byURL[u]; !ok {
				byURL[u] = i
			}
		}
	}
	// A target without a record is a phantom node, known by its id and its
	// URL, so that records naming it either way share it.
	phantomID := map[uint64]int{}
	phantomURL := map[string]int{}
	node := func(id uint64, u string) int {
		if i, ok := byID[id]; ok && id != 0 {
			return i
		}
		if i, ok := byURL[u]; ok && u != "" {
			return i
		}
		if i, ok := phantomID[id]; ok && id != 0 {
			return i
		}
		if i, ok := phantomURL[u]; ok && u != "" {
			return i
		}
		n := len(c.parent)
		c.parent = append(c.parent, n)
		c.ids = append(c.ids, id)
		c.urls = append(c.urls, u)
		if id != 0 {
			phantomID[id] = n
		}
		if u != "" {
			phantomURL[u] = n
		}
		return n
	}
	for i, e := range entries {
		if !duplicateClass(e.class) || (e.orig == 0 && e.dupOf == "") {
			continue
		}
		c.union(i, node(e.orig, e.dupOf))
	}
	c.rep = map[int]int{}
	c.value = map[int]string{}
	smallest := map[int]uint64{}
	for n, id := range c.ids {
		r := c.find(n)
		if v, ok := c.value[r]; !ok || c.urls[n] < v {
			c.value[r] = c.urls[n]
		}
		if id != 0 && (smallest[r] == 0 || id < smallest[r]) {
			smallest[r] = id
		}
		if n < len(entries) && storage.Class(entries[n].class) == storage.ClassUnique {
			if k, ok := c.rep[r]; !ok || id < entries[k].id {
				c.rep[r] = n
			}
		}
	}
	for r, s := range smallest {
		c.value[r] = strconv.FormatUint(s, 10)
	}
	for r, k := range c.rep {
		c.value[r] = strconv.FormatUint(entries[k].id, 10)
	}
	return c
}

// duplicateClass reports whether records of class name an original.
func duplicateClass(class string) bool {
	return storage.Class(class).Copy()
}

func (c *clusters) find(n int) int {
	for c.parent[n] != n {
		c.parent[n] = c.parent[c.parent[n]]
		n = c.parent[n]
	}
	return n
}

func (c *clusters) union(a, b int) {
	ra, rb := c.find(a), c.find(b)
	if ra != rb {
		c.parent[max(ra, rb)] = min(ra, rb)
	}
}

// of returns the cluster value of entry i and whether i represents it.
func (c *clusters) of(i int) (value string, representative bool) {
	r := c.find(i)
	k, ok := c.rep[r]
	return c.value[r], ok && k == i
}

// members returns the entries of every cluster with a representative, by
// the representative's index, each in entry order without the representative.
func (c *clusters) members() map[int][]int {
	out := map[int][]int{}
	for i := range c.entries {
		r := c.find(i)
		if k, ok := c.rep[r]; ok && k != i {
			out[k] = append(out[k], i)
		}
	}
	return out
}
