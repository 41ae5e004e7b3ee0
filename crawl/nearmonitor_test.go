package crawl_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// twoVersions is a generated family: two versions of a site of n pages
// (/p0.html ... under an index), where a fraction f of the pages below the
// index changed between the versions. An unchanged page differs only in a
// footer (a near-duplicate, J about 0.97); a changed page shares no text
// with its other version. Pages link back to the index only, so a page is
// reached through the index alone.
type twoVersions struct {
	n       int
	changed map[int]bool
}

func newTwoVersions(rng *rand.Rand, n int, f float64) twoVersions {
	v := twoVersions{n: n, changed: map[int]bool{}}
	k := int(f*float64(n) + 0.5)
	for _, i := range rng.Perm(n)[:k] {
		v.changed[i] = true
	}
	return v
}

// versionPage is a page of 300 words named by title, and a footer naming
// the version.
func versionPage(title, version string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>", title, title)
	for i := range 300 {
		fmt.Fprintf(&b, "%s-w%d ", strings.ReplaceAll(title, " ", "-"), i)
	}
	b.WriteString("</p><ul>")
	for _, l := range links {
		fmt.Fprintf(&b, "<li><a href=%q>%s</a></li>", l, l)
	}
	fmt.Fprintf(&b, "</ul><footer>built for version %s</footer></body></html>", version)
	return b.String()
}

// site serves version (1 or 2) of the family.
func (v twoVersions) site(version int) *site {
	s := &site{Pages: map[string]page{}}
	var names []string
	for i := range v.n {
		names = append(names, v.name(i))
	}
	tag := fmt.Sprint(version)
	s.Pages["/"] = page{Body: versionPage("site index", tag, names...)}
	for i := range v.n {
		title := fmt.Sprintf("page %d", i)
		if version == 2 && v.changed[i] {
			title = fmt.Sprintf("rewritten page %d", i)
		}
		s.Pages["/"+v.name(i)] = page{Body: versionPage(title, tag, "./")}
	}
	return s
}

func (v twoVersions) name(i int) string { return fmt.Sprintf("p%d.html", i) }

// fetchedPaths returns the paths requested of ip (not robots.txt), failing
// the test for a path requested twice.
func fetchedPaths(t *testing.T, log *hitLog, ip string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, h := range log.byIP(ip) {
		if h.Path == "/robots.txt" {
			continue
		}
		if out[h.Path] {
			t.Errorf("%s%s fetched twice", ip, h.Path)
		}
		out[h.Path] = true
	}
	return out
}

// copySide returns which of the two index pages the crawl kept as a
// duplicate of the other: the copy side, whose links are suppressed.
func copySide(t *testing.T, res crawlResult, bases [2]string) int {
	t.Helper()
	copies := 0
	side := -1
	for i, b := range bases {
		if p := res.page(t, b+"/"); p.Class.Duplicate() {
			copies++
			side = i
		}
	}
	if copies != 1 {
		t.Fatalf("%d of the two index pages are duplicates, want 1", copies)
	}
	return side
}

// TestNearLinkMonitor: two versions of a site, a fraction f of the pages
// changed, f in {0, 0.01, 0.05, 0.2}, crawled with mirror detection off
// (the near-duplicate link rules alone) and the link monitor at rate 0.1.
// The copy side is the version whose index the crawl keeps as a duplicate.
// Its links are suppressed but for the picks (mirror.PickPath of the seed
// and each page's path: the same whichever version is the copy), so:
//   - the copy's pages fetched are its index and the picks, exactly, unless
//     a pick is a changed page: the extra requests at f = 0 are the picks;
//   - a changed pick is not a duplicate, and fires the monitor: then every
//     changed page of the copy is fetched;
//   - no URL is fetched twice.
//
// Seeded (HORSESHOE_SEED): the changed pages and the monitor's seed.
func TestNearLinkMonitor(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	rng := rand.New(rand.NewPCG(seed, 2))
	const n, rate = 100, 0.1
	for _, f := range []float64{0, 0.01, 0.05, 0.2} {
		v := newTwoVersions(rng, n, f)
		sampleSeed := rng.Uint64()
		t.Run(fmt.Sprintf("f=%v", f), func(t *testing.T) {
			checkNearLinkMonitor(t, v, rate, sampleSeed)
		})
	}
}

// crawlNearMonitored serves the two versions of v on ips (version 1 on
// ips[0]) and crawls both from their index with mirror detection off, the
// near-duplicate link rules on and the link monitor at rate with sampleSeed.
// It returns the crawl, the servers' shared request log and the two bases.
func crawlNearMonitored(t *testing.T, v twoVersions, ips [2]string, rate float64, sampleSeed uint64) (crawlResult, *hitLog, [2]string) {
	t.Helper()
	log := &hitLog{}
	s1 := startServer(t, ips[0], v.site(1).handler(), log)
	s2 := startServer(t, ips[1], v.site(2).handler(), log)
	bases := [2]string{s1.Base(ips[0]), s2.Base(ips[1])}
	res := runCrawl(t, crawlConfig{NoSitemaps: true, Edit: func(c *configs.Config) {
		c.Crawl.SkipDuplicateLinks, c.Mirror.Enabled = true, false
		c.Mirror.Policy, c.Mirror.LinkSample, c.Mirror.SampleSeed = "skip", rate, sampleSeed
	}}, bases[0]+"/", bases[1]+"/")
	return res, log, bases
}

func checkNearLinkMonitor(t *testing.T, v twoVersions, rate float64, sampleSeed uint64) {
	ips := [2]string{"127.0.0.171", "127.0.0.172"}
	res, log, bases := crawlNearMonitored(t, v, ips, rate, sampleSeed)

	picks := map[string]bool{}
	changedPick := false
	for i := range v.n {
		if mirror.PickPath(sampleSeed, rate, strings.TrimSuffix(v.name(i), ".html")) {
			picks["/"+v.name(i)] = true
			changedPick = changedPick || v.changed[i]
		}
	}
	side := copySide(t, res, bases)
	orig := fetchedPaths(t, log, ips[1-side])
	got := fetchedPaths(t, log, ips[side])
	var changed []string
	for i := range v.n {
		if v.changed[i] {
			changed = append(changed, "/"+v.name(i))
		}
		if !orig["/"+v.name(i)] {
			t.Errorf("the original's %s was not fetched", v.name(i))
		}
	}
	sort.Strings(changed)
	t.Logf("sample seed %d, copy %s, %d changed %v, %d picks, %d copy pages fetched, requests %d",
		sampleSeed, ips[side], len(changed), changed, len(picks), len(got), res.Requests)
	// The report: the policy, its expected loss, and the one prefix pair
	// (the copy's root onto the original's), fired when a changed page
	// was picked.
	c := res.Copies
	if c == nil || c.Policy != "skip" || c.Rate != rate || c.Seed != sampleSeed {
		t.Fatalf("report's copy policy %+v, want skip at %v, seed %d", c, rate, sampleSeed)
	}
	if loss, _ := mirror.WorstExpectedLoss(rate); c.ExpectedLoss != loss {
		t.Errorf("report's expected loss %v, want %v", c.ExpectedLoss, loss)
	}
	if len(picks) > 0 && (len(c.Pairs) != 1 || c.Pairs[0].Fired != changedPick || c.Pairs[0].Copy != bases[side]+"/") {
		t.Errorf("report's near-duplicate pairs %+v, want one, copy %s/, fired %v", c.Pairs, bases[side], changedPick)
	}
	if !changedPick {
		// No changed page is picked: the monitor does not fire, and the
		// copy costs its index and the picks.
		want := map[string]bool{"/": true}
		for p := range picks {
			want[p] = true
		}
		if diff := setDiff(got, want); diff != "" {
			t.Errorf("copy pages fetched differ from its index and the picks: %s", diff)
		}
		return
	}
	// A changed page is picked: it is not a duplicate, the monitor fires,
	// and every changed page of the copy is fetched.
	for _, p := range changed {
		if !got[p] {
			t.Errorf("changed page %s of the copy not fetched after the monitor fired", p)
		}
	}
}

// setDiff describes how got differs from want ("" when equal).
func setDiff(got, want map[string]bool) string {
	var extra, missing []string
	for p := range got {
		if !want[p] {
			extra = append(extra, p)
		}
	}
	for p := range want {
		if !got[p] {
			missing = append(missing, p)
		}
	}
	if len(extra)+len(missing) == 0 {
		return ""
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("extra %v, missing %v", extra, missing)
}

// TestMirrorPolicy: mirror.policy on a generated mirror pair (one version
// of a site on two hosts, mirror detection on): fetch requests every page
// of both sides and skips none; verify requests at least the copy pages
// its share picks (mirror.PickPath of the seed and the page's path);
// skip leaves some of the copy unrequested, each page recorded skipped.
// No URL is fetched twice under any. Seeded (HORSESHOE_SEED).
func TestMirrorPolicy(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	rng := rand.New(rand.NewPCG(seed, 3))
	const n, share = 120, 0.3
	v := newTwoVersions(rng, n, 0)
	for _, policy := range []string{"skip", "verify", "fetch"} {
		sampleSeed := rng.Uint64()
		t.Run(policy, func(t *testing.T) {
			ips := [2]string{"127.0.0.173", "127.0.0.174"}
			log := &hitLog{}
			s1 := startServer(t, ips[0], v.site(1).handler(), log)
			s2 := startServer(t, ips[1], v.site(1).handler(), log)
			bases := [2]string{s1.Base(ips[0]), s2.Base(ips[1])}
			res := runCrawl(t, crawlConfig{NoSitemaps: true, Mirror: true, Edit: func(c *configs.Config) {
				c.Mirror.Policy, c.Mirror.VerifyShare, c.Mirror.SampleSeed = policy, share, sampleSeed
			}}, bases[0]+"/", bases[1]+"/")
			side := copySide(t, res, bases)
			got := fetchedPaths(t, log, ips[side])
			orig := fetchedPaths(t, log, ips[1-side])
			t.Logf("sample seed %d: copy %s, %d of %d copy pages fetched, %d skip records, mirrors %d",
				sampleSeed, ips[side], len(got), n+1, len(res.Skipped), len(res.Mirrors))
			for i := range n {
				p := "/" + v.name(i)
				if !orig[p] {
					t.Errorf("the original's %s was not fetched", p)
				}
				switch policy {
				case "fetch":
					if !got[p] {
						t.Errorf("fetch: the copy's %s was not fetched", p)
					}
				case "verify":
					if mirror.PickPath(sampleSeed, share, strings.TrimSuffix(v.name(i), ".html")) && !got[p] {
						t.Errorf("verify: the copy's %s is in the share and was not fetched", p)
					}
				}
			}
			switch policy {
			case "fetch":
				if len(res.Skipped) > 0 {
					t.Errorf("fetch: %d skip records, want none", len(res.Skipped))
				}
			case "skip":
				if len(got) > n {
					t.Errorf("skip: %d of the copy's %d pages fetched, none skipped", len(got), n+1)
				}
				for i := range n {
					u := bases[side] + "/" + v.name(i)
					if got["/"+v.name(i)] {
						continue
					}
					if r, ok := res.Skipped[u]; ok && r.Class == storage.ClassMirrorSkipped {
						continue
					}
					if r, ok := res.Pages[u]; !ok || r.Class != storage.ClassMirrorSkipped {
						t.Errorf("skip: the copy's %s neither fetched nor recorded skipped", u)
					}
				}
			}
		})
	}
}

// TestNearLinkMonitorCost measures, over HORSESHOE_MEASURE seeds (skipped
// when unset), the copy's requests and the changed pages lost on the
// generated family at rates 0, 0.05 and 0.1, beside the arithmetic's
// expectation (docs/DEDUP.md, "The links of a near-duplicate"). It asserts
// nothing but what TestNearLinkMonitor does: it is a measurement.
func TestNearLinkMonitorCost(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("HORSESHOE_MEASURE"))
	if runs == 0 {
		t.Skip("HORSESHOE_MEASURE=<seeds> measures")
	}
	const n = 100
	for _, f := range []float64{0, 0.01, 0.05, 0.2} {
		for _, rate := range []float64{0, 0.05, 0.1} {
			requests, lost, changed, fired := 0, 0, 0, 0
			for s := range runs {
				rng := rand.New(rand.NewPCG(uint64(s), 2))
				v := newTwoVersions(rng, n, f)
				sampleSeed := rng.Uint64()
				ips := [2]string{"127.0.0.175", "127.0.0.176"}
				res, log, bases := crawlNearMonitored(t, v, ips, rate, sampleSeed)
				side := copySide(t, res, bases)
				got := fetchedPaths(t, log, ips[side])
				requests += len(got)
				for i := range n {
					if v.changed[i] {
						changed++
						if !got["/"+v.name(i)] {
							lost++
						}
					}
				}
				if c := res.Copies; c != nil && len(c.Pairs) == 1 && c.Pairs[0].Fired {
					fired++
				}
			}
			d := int(f*n + 0.5)
			t.Logf("f %.2f r %.2f: %d seeds, copy requests %.1f of %d a crawl, fired %d, changed pages lost %d of %d (%.1f a crawl; expected D(1-r)^D = %.2f)",
				f, rate, runs, float64(requests)/float64(runs), n+1, fired, lost, changed,
				float64(lost)/float64(runs), mirror.ExpectedLoss(rate, d))
		}
	}
}
