package export

import (
	"cmp"
	"errors"
	"hash/maphash"
	"slices"
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
//
// The clustering streams (issue 30): it keeps a fixed-size state per record
// (an id, a parent, a 128-bit hash of each URL it is known by), never the
// records or their strings, and reads the store again where it needs them.
// The nodes are numbered in the order the store gives its records: page
// records in id order (ForEachPage), then skip records (ForEachSkipped).

// clusters is the union-find over the records (nodes 0..records-1) and the
// phantom nodes of targets without a record (the nodes after them).
type clusters struct {
	pages   int      // nodes 0..pages-1 are the page records, in id order
	records int      // nodes pages..records-1 are the skip records
	ids     []uint64 // the id of every node (0: a skip record, a target named by URL only)
	parent  []int32
	unique  []bool // the node is a unique page
	byURL   []urlNode
	seed    maphash.Seed
	edges   []edge

	phantomID  map[uint64]int32
	phantomURL map[urlHash]int32

	rep    []int32          // by component root: its representative (a unique page), -1 if none
	small  []uint64         // by component root: its smallest id (0: it holds none)
	minURL map[int32]string // component root without an id -> its smallest URL
}

// urlHash is a 128-bit hash of a URL: two URLs of one store share one with
// a chance below 10^-25.
type urlHash [2]uint64

// urlNode is one URL a node is known by; rank orders the nodes sharing a
// URL: a page record's URL (0) outranks a page's final URL (1), which
// outranks a skip record's URL (2).
type urlNode struct {
	h    urlHash
	rank uint8
	node int32
}

// edge is a copy record's link to its original, as named.
type edge struct {
	node int32
	orig uint64
	url  urlHash // zero: no URL named
	has  bool    // the record names a URL
}

// errStoreChanged reports a store that changed between two reads of one
// export.
var errStoreChanged = errors.New("the store changed during the export (is a crawl writing it?)")

func (c *clusters) hash(u string) urlHash {
	return urlHash{maphash.String(c.seed, u), maphash.String(c.seed, "\x00"+u)}
}

// add adds the next record (pages first, in id order, then skip records).
func (c *clusters) add(p *storage.Page, skip bool) error {
	n := int32(len(c.ids))
	if len(c.ids) >= 1<<31-1 {
		return errors.New("too many records to cluster")
	}
	id := p.ID
	if skip {
		id = 0
	} else {
		if c.pages > 0 && id <= c.ids[c.pages-1] {
			return errors.New("page records out of id order")
		}
		c.pages++
	}
	c.ids = append(c.ids, id)
	c.parent = append(c.parent, n)
	c.unique = append(c.unique, !skip && p.Class == storage.ClassUnique)
	rank := uint8(0)
	if skip {
		rank = 2
	}
	c.byURL = append(c.byURL, urlNode{c.hash(p.URL), rank, n})
	if !skip && p.FinalURL != "" {
		c.byURL = append(c.byURL, urlNode{c.hash(p.FinalURL), 1, n})
	}
	if p.Class.Copy() && (p.OriginalID != 0 || p.DuplicateOf != "") {
		e := edge{node: n, orig: p.OriginalID, has: p.DuplicateOf != ""}
		if e.has {
			e.url = c.hash(p.DuplicateOf)
		}
		c.edges = append(c.edges, e)
	}
	return nil
}

// newClusters reads the records of st once and joins every copy record to
// its original.
func newClusters(st Store) (*clusters, error) {
	c := &clusters{seed: maphash.MakeSeed(), phantomID: map[uint64]int32{}, phantomURL: map[urlHash]int32{}}
	if err := st.ForEachPage(func(p *storage.Page) error { return c.add(p, false) }); err != nil {
		return nil, err
	}
	if err := st.ForEachSkipped(func(p *storage.Page) error { return c.add(p, true) }); err != nil {
		return nil, err
	}
	c.records = len(c.ids)
	slices.SortFunc(c.byURL, func(a, b urlNode) int {
		return cmp.Or(cmp.Compare(a.h[0], b.h[0]), cmp.Compare(a.h[1], b.h[1]), cmp.Compare(a.rank, b.rank), cmp.Compare(a.node, b.node))
	})
	for _, e := range c.edges {
		c.union(e.node, c.node(e.orig, e.url, e.has, true))
	}
	c.edges = nil
	c.rep = make([]int32, len(c.ids))
	c.small = make([]uint64, len(c.ids))
	for n := range c.rep {
		c.rep[n] = -1
	}
	for n, id := range c.ids {
		r := c.find(int32(n))
		if id != 0 && (c.small[r] == 0 || id < c.small[r]) {
			c.small[r] = id
		}
		if c.unique[n] {
			if k := c.rep[r]; k < 0 || id < c.ids[k] {
				c.rep[r] = int32(n)
			}
		}
	}
	c.unique = nil
	return c, nil
}

// node returns the node of the target named by id and URL hash h (has: a
// URL is named): its record, else its phantom node, made when create
// (else -1).
func (c *clusters) node(id uint64, h urlHash, has bool, create bool) int32 {
	if id != 0 {
		if i, ok := slices.BinarySearch(c.ids[:c.pages], id); ok {
			return int32(i)
		}
	}
	if has {
		i, _ := slices.BinarySearchFunc(c.byURL, h, func(e urlNode, h urlHash) int {
			return cmp.Or(cmp.Compare(e.h[0], h[0]), cmp.Compare(e.h[1], h[1]))
		})
		if i < len(c.byURL) && c.byURL[i].h == h {
			return c.byURL[i].node
		}
	}
	if i, ok := c.phantomID[id]; ok && id != 0 {
		return i
	}
	if i, ok := c.phantomURL[h]; ok && has {
		return i
	}
	if !create {
		return -1
	}
	n := int32(len(c.parent))
	c.parent = append(c.parent, n)
	c.ids = append(c.ids, id)
	c.unique = append(c.unique, false)
	if id != 0 {
		c.phantomID[id] = n
	}
	if has {
		c.phantomURL[h] = n
	}
	return n
}

// target returns the node p (record node n) names as its original, -1 if
// none.
func (c *clusters) target(p *storage.Page) int32 {
	if !p.Class.Copy() || (p.OriginalID == 0 && p.DuplicateOf == "") {
		return -1
	}
	var h urlHash
	if p.DuplicateOf != "" {
		h = c.hash(p.DuplicateOf)
	}
	return c.node(p.OriginalID, h, p.DuplicateOf != "", false)
}

// urlOnly notes url as a URL of node n, for the value of a cluster that holds
// no id (its smallest URL).
func (c *clusters) urlOnly(n int32, url string) {
	if n < 0 || url == "" {
		return
	}
	r := c.find(n)
	if c.small[r] != 0 { // a cluster with a representative holds its id
		return
	}
	if c.minURL == nil {
		c.minURL = map[int32]string{}
	}
	if v, ok := c.minURL[r]; !ok || url < v {
		c.minURL[r] = url
	}
}

func (c *clusters) find(n int32) int32 {
	for c.parent[n] != n {
		c.parent[n] = c.parent[c.parent[n]]
		n = c.parent[n]
	}
	return n
}

func (c *clusters) union(a, b int32) {
	ra, rb := c.find(a), c.find(b)
	if ra != rb {
		c.parent[max(ra, rb)] = min(ra, rb)
	}
}

// repOf returns the representative of node n's cluster, -1 if it has none.
func (c *clusters) repOf(n int32) int32 { return c.rep[c.find(n)] }

// of returns the cluster value of node n and whether n represents it.
func (c *clusters) of(n int32) (value string, representative bool) {
	r := c.find(n)
	if k := c.rep[r]; k >= 0 {
		return strconv.FormatUint(c.ids[k], 10), k == n
	}
	if s := c.small[r]; s != 0 {
		return strconv.FormatUint(s, 10), false
	}
	return c.minURL[r], false
}

// memberIndex holds the members of every cluster with a representative
// (every record of it but the representative), in record order: what the
// representative's record lists.
type memberIndex struct {
	reps    []int32 // sorted
	members []Member
}

// members reads the records of st again and returns every cluster's
// members; it also learns the URLs of the clusters without an id.
func (c *clusters) members(st Store) (*memberIndex, error) {
	type ranked struct {
		rep int32
		m   Member
	}
	var list []ranked
	n := int32(0)
	visit := func(p *storage.Page, skip bool) error {
		if int(n) >= c.records || (!skip && c.ids[n] != p.ID) || (skip && int(n) < c.pages) {
			return errStoreChanged
		}
		if k := c.repOf(n); k >= 0 && k != n {
			list = append(list, ranked{k, Member{URL: p.URL, Class: string(p.Class), DuplicateOf: p.DuplicateOf, Similarity: p.Similarity, Method: p.Method}})
		}
		if t := c.target(p); t >= int32(c.records) { // a phantom named by this URL
			c.urlOnly(t, p.DuplicateOf)
		}
		if skip {
			c.urlOnly(n, p.URL)
		}
		n++
		return nil
	}
	if err := st.ForEachPage(func(p *storage.Page) error { return visit(p, false) }); err != nil {
		return nil, err
	}
	if int(n) != c.pages {
		return nil, errStoreChanged
	}
	if err := st.ForEachSkipped(func(p *storage.Page) error { return visit(p, true) }); err != nil {
		return nil, err
	}
	if int(n) != c.records {
		return nil, errStoreChanged
	}
	slices.SortStableFunc(list, func(a, b ranked) int { return cmp.Compare(a.rep, b.rep) })
	mi := &memberIndex{reps: make([]int32, len(list)), members: make([]Member, len(list))}
	for i, r := range list {
		mi.reps[i], mi.members[i] = r.rep, r.m
	}
	return mi, nil
}

// of returns the members of the cluster node k represents.
func (mi *memberIndex) of(k int32) []Member {
	i, _ := slices.BinarySearch(mi.reps, k)
	j := i
	for j < len(mi.reps) && mi.reps[j] == k {
		j++
	}
	return mi.members[i:j]
}
