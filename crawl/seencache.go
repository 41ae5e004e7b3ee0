package crawl

import "sync"

// seenCacheSize bounds the seen cache: at most this many URLs, each its
// string (shared with the link that named it) and its share of two maps,
// about 50 bytes plus the URL's length: about 8 MB at 80-byte URLs.
const seenCacheSize = 1 << 16

// seenCache remembers URLs recently found in the seen-set, so that the links
// a crawl meets again and again (every page's navigation) are answered
// without a store read (issue 29). It only ever answers "seen": a URL it
// does not hold is asked of the store, as before. It is exact because a mark
// is never removed from the seen-set and a URL is added only once a
// transaction that found or made its mark has committed (committed: a
// transaction run again or rolled back adds nothing).
//
// Two generations bound it: new URLs go into cur; when cur holds half the
// bound, it becomes prev (the older prev is dropped). A URL found in prev is
// moved to cur, so the URLs in use stay.
type seenCache struct {
	mu        sync.Mutex
	cur, prev map[string]struct{}
	max       int // 0: seenCacheMax
}

// seenCacheMax is the bound of an engine's seen cache (tests lower it).
var seenCacheMax = seenCacheSize

// has reports whether u is known to be marked seen.
func (c *seenCache) has(u string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[u]; ok {
		return true
	}
	if _, ok := c.prev[u]; ok {
		c.addLocked(u)
		return true
	}
	return false
}

// add notes URLs whose marks are committed in the seen-set.
func (c *seenCache) add(urls []string) {
	if len(urls) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range urls {
		c.addLocked(u)
	}
}

func (c *seenCache) addLocked(u string) {
	limit := c.max
	if limit == 0 {
		limit = seenCacheMax
	}
	half := max(limit/2, 1)
	if c.cur == nil {
		c.cur = make(map[string]struct{}, half)
	}
	if len(c.cur) >= half {
		c.prev, c.cur = c.cur, make(map[string]struct{}, half)
	}
	c.cur[u] = struct{}{}
}

// len is the number of URLs held (tests).
func (c *seenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.prev)
}

// seen reports whether cu is marked in the seen-set: from the engine's seen
// cache, else from the store (a URL found marked there is added to the
// cache once the transaction commits).
func (ct *commitTx) seen(cu string) (bool, error) {
	if ct.e.seenURLs.has(cu) {
		return true, nil
	}
	_, seen, err := ct.tx.SeenID(cu)
	if seen {
		ct.marked = append(ct.marked, cu)
	}
	return seen, err
}
