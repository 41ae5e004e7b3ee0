package crawl

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

var seenCacheSeed = flag.Uint64("seencache.seed", 0, "seed of TestSeenCacheExact (0: a new one, printed)")

// TestSeenCacheExact: the seen cache answers "seen" only for URLs added to
// it (never a URL it was not given: a false "seen" would drop a link), holds
// at most its bound, and holds every URL of a stream of half its bound. A
// seeded random stream of adds and lookups over a pool of URLs larger than
// the bound; the seed is printed and settable (-seencache.seed).
func TestSeenCacheExact(t *testing.T) {
	r := rand.New(rand.NewPCG(testtools.FlagSeed(t, *seenCacheSeed, "seencache.seed"), 29))
	for _, bound := range []int{1, 2, 7, 64} {
		c := &seenCache{max: bound}
		added := map[string]bool{}
		for step := range 5000 {
			u := fmt.Sprintf("http://h%d.example/p%d", r.IntN(3), r.IntN(4*bound+3))
			if r.IntN(3) == 0 {
				c.add([]string{u})
				added[u] = true
			} else if c.has(u) && !added[u] {
				t.Fatalf("bound %d, step %d: %s answered seen but never added", bound, step, u)
			}
			if n := c.len(); n > max(bound, 2) {
				t.Fatalf("bound %d, step %d: %d URLs held", bound, step, n)
			}
		}
		fresh := &seenCache{max: bound}
		var urls []string
		for i := range max(bound/2, 1) {
			urls = append(urls, fmt.Sprintf("http://h.example/%d-%d", r.IntN(1000), i))
		}
		fresh.add(urls)
		for _, u := range urls {
			if !fresh.has(u) {
				t.Errorf("bound %d: %s of %d added, not held", bound, u, len(urls))
			}
		}
	}
}
