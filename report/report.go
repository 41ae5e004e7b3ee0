// Package report renders the crawl report of Horseshoe in three formats: a
// machine-readable JSON document (the public contract described in SCHEMA.md),
// a plain-text summary that fits a 100-column terminal, and one self-contained
// HTML file with inline CSS and inline SVG charts.
//
// The package is pure: the crawl engine fills a Data value from storage and
// the writers render it to an io.Writer. Nothing here touches the network or
// the disk, and the writers never modify the Data they are given.
package report

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Page classes, as stored in Page.Class.
const (
	ClassUnique           = "unique"
	ClassExactDuplicate   = "exact_duplicate"
	ClassNearDuplicate    = "near_duplicate"
	ClassMirrorSkipped    = "mirror_skipped"
	ClassRobotsDisallowed = "robots_disallowed"
	ClassNotHTML          = "not_html"
	ClassError            = "error"
)

// Duplicate detection methods, as stored in Page.Method.
const (
	MethodExact        = "exact"
	MethodSupershingle = "supershingle"
	MethodSimhash      = "simhash"
	MethodMirror       = "mirror"
)

// Classes returns the seven page classes in report order. It returns a fresh
// slice on every call, so callers may modify it.
func Classes() []string {
	return []string{
		ClassUnique, ClassExactDuplicate, ClassNearDuplicate, ClassMirrorSkipped,
		ClassRobotsDisallowed, ClassNotHTML, ClassError,
	}
}

// Page is one page record: a URL the crawler fetched or decided not to fetch.
type Page struct {
	URL         string    `json:"url"`
	Host        string    `json:"host"`
	Status      int       `json:"status"` // HTTP status, 0 if not fetched
	ContentType string    `json:"content_type"`
	Title       string    `json:"title,omitempty"`
	Class       string    `json:"class"`                  // one of the Class* constants
	DuplicateOf string    `json:"duplicate_of,omitempty"` // URL of the original
	Similarity  float64   `json:"similarity,omitempty"`   // Jaccard: exact when settled, else estimated (1 for exact)
	Method      string    `json:"method,omitempty"`       // one of the Method* constants
	Depth       int       `json:"depth"`
	FetchedAt   time.Time `json:"fetched_at"`
	Error       string    `json:"error,omitempty"`
	// Change is the latest recrawl's change class of the page (Change*
	// constants); absent when no recrawl visited or found it.
	Change           string  `json:"change,omitempty"`
	ChangeSimilarity float64 `json:"change_similarity,omitempty"` // to the previous version
	MovedTo          string  `json:"moved_to,omitempty"`          // where a moved page redirects now
}

// Mirror is a mapping from a path prefix on one host to a path prefix whose
// content it replicates, together with the evidence for it. Between two hosts
// it is a mirror; within one host it is a replicated prefix.
type Mirror struct {
	Host           string  `json:"host"`
	Prefix         string  `json:"prefix"`
	MirrorOf       string  `json:"mirror_of"` // host of the original
	OriginalPrefix string  `json:"original_prefix"`
	PathsCompared  int     `json:"paths_compared"`
	PathsMatched   int     `json:"paths_matched"`
	Score          float64 `json:"score"`
	RequestsSaved  int     `json:"requests_saved"`
	// The verification stream: URLs fetched after the decision although
	// they could have been skipped, and how many still matched. The share
	// that did not estimates how much updated content skipping lets through.
	Verified      int `json:"verified"`
	VerifyMatched int `json:"verify_matched"`
	// Gap probes: mirror pages fetched because the original lacked them
	// (or linked to what it lacked), and how many held new content.
	GapProbes int `json:"gap_probes"`
	GapHits   int `json:"gap_hits"`
	// Samples: copies fetched to verify the candidate before the decision.
	Samples int `json:"samples"`
	// Link evidence: links of the duplicate pairs' copies, and those that
	// map onto their original's links under this mapping.
	LinksCompared int `json:"links_compared"`
	LinksMatched  int `json:"links_matched"`
	// The direction's evidence: paths where the mirror (the original)
	// answered 404 or 410 while the other side served a page, whether
	// that evidence chose the direction (else, on a tie, the side first
	// seen as the copy is the mirror), and how often the direction was
	// reversed after the decision.
	LacksMirror   int  `json:"lacks_mirror"`
	LacksOriginal int  `json:"lacks_original"`
	ByLacks       bool `json:"direction_by_lacks"`
	Swaps         int  `json:"swaps"`
	// Halted: the loss monitor found the verification stream's pages
	// differing beyond the loss rate and stopped skipping; every URL of
	// the mirror is fetched from then on.
	Halted bool `json:"halted"`
}

// Direction says what chose which side is the mirror: the paths each side
// lacked (404 or 410 where the other side served a page), and whether the
// direction was reversed.
func (m Mirror) Direction() string {
	var s string
	if m.ByLacks {
		s = fmt.Sprintf("by lacks (404/410 vs served): mirror %d, original %d", m.LacksMirror, m.LacksOriginal)
	} else {
		s = fmt.Sprintf("first seen as the copy (lacks tied: mirror %d, original %d)", m.LacksMirror, m.LacksOriginal)
	}
	if m.Swaps > 0 {
		s += fmt.Sprintf("; reversed %dx", m.Swaps)
	}
	return s
}

// DifferRate estimates the share of skipped URLs whose content differs from
// their counterpart, from the verification stream (-1 when it has no sample).
func (m Mirror) DifferRate() float64 {
	if m.Verified == 0 {
		return -1
	}
	return 1 - float64(m.VerifyMatched)/float64(m.Verified)
}

// HostNote records a politeness event on a host worth reporting.
type HostNote struct {
	Host   string `json:"host"`
	Kind   string `json:"kind"`   // "crawl_delay_capped", "gave_up" or "sitemap"
	Detail string `json:"detail"` // e.g. "Crawl-delay 3600s capped at 30s", or the reason
}

// IrrelevantParam is a parameter the crawl found irrelevant on a host: exact duplicates
// whose URLs differed only in its value (issue 16). From the decision on, the host's
// URLs were canonicalized without it.
type IrrelevantParam struct {
	Host      string      `json:"host"`
	Param     string      `json:"param"`           // query parameter name, ";name" for a path parameter, "/prefix/*/" for a path segment
	Value     string      `json:"value,omitempty"` // a path segment: the value its URLs were given
	Pairs     int         `json:"pairs"`           // pieces of evidence: duplicate pairs differing only in this parameter
	Paths     int         `json:"paths"`           // distinct URLs (path and other parameters) among them
	Examples  []ParamPair `json:"examples"`        // the first pairs; never null
	Withdrawn bool        `json:"withdrawn"`       // later contradicted: stripping stopped then
	Counter   *ParamPair  `json:"counter,omitempty"`
}

// MissingSubtree is a directory one host of a mirror pair was found to lack
// (mirror.Subtrees): its first Needed answers were all 404 or 410 and none
// served a page, which a directory the host holds does with probability at
// most ErrorRate. Its URLs were skipped for their counterparts on the other
// side (docs/MIRRORS.md, "Missing subtrees").
type MissingSubtree struct {
	Prefix      string   `json:"prefix"`                // absolute URL of the directory
	Side        string   `json:"side"`                  // "original" or "mirror": the host's role when decided
	Counterpart string   `json:"counterpart,omitempty"` // the directory on the other side
	Lacks       int      `json:"lacks"`                 // evidence: URLs under it that answered 404 or 410
	Needed      int      `json:"needed"`                // the evidence the decision takes
	ErrorRate   float64  `json:"error_rate"`            // the rule's stated error rate
	Examples    []string `json:"examples"`              // the first of them; never null
	Withdrawn   bool     `json:"withdrawn"`             // a page was served under it later: requested again
	Counter     string   `json:"counter,omitempty"`     // that page
}

// ParamPair is two URLs that differ only in one parameter: the same text (evidence),
// or different text (counter-evidence).
type ParamPair struct {
	URL   string `json:"url"`
	Other string `json:"other"`
}

// Stats are the crawl-wide counters.
type Stats struct {
	Pages    int            `json:"pages"`    // page records
	Requests int            `json:"requests"` // HTTP requests sent (incl. robots.txt)
	ByClass  map[string]int `json:"by_class"` // every class present, zero counts for the 7 classes
	Hosts    int            `json:"hosts"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished,omitzero"` // absent while the crawl runs
	Complete bool           `json:"complete"`          // frontier exhausted
}

// CurvePoint is one point of the supershingle filter curve: the probability
// that two documents with resemblance Jaccard are reported as candidates.
type CurvePoint struct {
	Jaccard     float64 `json:"jaccard"`
	Probability float64 `json:"probability"`
}

// Data is everything a report shows.
type Data struct {
	Stats              Stats             `json:"stats"`
	Pages              []Page            `json:"pages"`
	Mirrors            []Mirror          `json:"mirrors"`             // never null in JSON: [] when empty
	ReplicatedPrefixes []Mirror          `json:"replicated_prefixes"` // same-host prefix pairs; never null
	HostNotes          []HostNote        `json:"host_notes"`          // capped Crawl-delays, hosts given up, sitemaps; never null
	IrrelevantParams   []IrrelevantParam `json:"irrelevant_params"`   // learned per host; never null
	MissingSubtrees    []MissingSubtree  `json:"missing_subtrees"`    // learned on mirror hosts; never null
	Filter             string            `json:"filter"`              // e.g. "altavista 6x14 r=2"
	Curve              []CurvePoint      `json:"filter_curve"`
	// EndToEnd is the measured end-to-end curve: the share of page pairs
	// at exact Jaccard J that the detector drops (filter, simhash and
	// verification together, dedup.EndToEndCurve). Absent when not measured.
	EndToEnd []CurvePoint `json:"end_to_end_curve,omitempty"`
	// Damage lists the damaged files of the crawl's store and what each
	// costs, one line each ("000001.vlog: 3 value(s) fail their checksum
	// ..."); absent when the store is sound.
	Damage []string `json:"damage,omitempty"`
	// Aliases is what the canonical hints did (crawl.canonical_hints);
	// absent when no hint was used or checked.
	Aliases *Aliases `json:"alias_hints,omitempty"`
	// Changes summarizes the latest recrawl; absent before any.
	Changes *Changes `json:"changes,omitempty"`
	// CopyPolicy is what the crawl did with the copy side of prefix pairs
	// (mirror.policy) and the loss it expects at its rate; absent when the
	// crawl did not record it.
	CopyPolicy *CopyPolicy `json:"copy_policy,omitempty"`
	// Workers shows the workers of a crawl shared through Redis, in the
	// live report of one of them; absent otherwise.
	Workers *Workers `json:"workers,omitempty"`
	// Unavailable, in the live report of a worker of a shared crawl, says
	// why the crawl-wide data (Workers) could not be read from Redis:
	// "crawl-wide data unavailable: <reason>"; absent otherwise.
	Unavailable string `json:"unavailable,omitempty"`
}

// CopyPolicy is mirror.policy, its rate, and the near-duplicate link
// monitor's prefix pairs (README, "Mirrors": the price of skipping).
type CopyPolicy struct {
	Policy string  `json:"policy"`      // skip, verify or fetch
	Rate   float64 `json:"rate"`        // share of a copy's suppressed pages fetched: link_sample, verify_share, or 1
	Seed   uint64  `json:"sample_seed"` // the picks' seed
	// ExpectedLoss is the largest expected number of pages lost per prefix
	// pair at Rate, over the number D of pages that differ:
	// max over D of D (1 - Rate)^D, about 1 / (e Rate), at D
	// ExpectedLossAtD; 0 when every page is fetched. Unbounded (Rate 0):
	// every differing page may be lost.
	ExpectedLoss    float64 `json:"expected_loss"`
	ExpectedLossAtD int     `json:"expected_loss_at_d"`
	Unbounded       bool    `json:"unbounded,omitempty"`
	// Pairs are the prefix pairs where the near-duplicate link monitor
	// picked links (never null).
	Pairs []LinkPair `json:"near_duplicate_pairs"`
}

// LinkPair is the near-duplicate link monitor's record of one prefix pair.
type LinkPair struct {
	Copy     string `json:"copy"`     // origin and prefix of the copy side
	Original string `json:"original"` // origin and prefix of the original side
	Sampled  int    `json:"sampled"`  // picked copies fetched and compared
	Events   int    `json:"events"`   // of them, not duplicates of their counterpart
	Fired    bool   `json:"fired"`    // the pair's suppressed links were followed
}

// Aliases counts what rel=canonical and sitemap hints saved, and how often
// they proved wrong.
type Aliases struct {
	// RequestsSaved counts the aliases held back on their canonical URL
	// (records mirror_skipped with method "canonical"), not fetched.
	RequestsSaved int `json:"requests_saved"`
	// Withdrawn counts the aliases held back and then queued, because
	// their host's hints were distrusted.
	Withdrawn int `json:"withdrawn"`
	// ClaimsChecked counts the pages naming another URL canonical that
	// were checked against it by the duplicate decision, ClaimsWrong
	// those of them that were not its duplicates (at most ClaimsChecked).
	ClaimsChecked int `json:"claims_checked"`
	ClaimsWrong   int `json:"claims_wrong"`
	// Distrusted lists the hosts whose hints are no longer used, and why
	// (never null).
	Distrusted []HostNote `json:"distrusted_hosts"`
}

// HostRow is the per-host summary shown in the text and HTML reports.
type HostRow struct {
	Host string
	// Fetched counts pages that got an HTTP response (Status > 0).
	Fetched int
	// Unique, Exact, Near and MirrorSkipped count pages of those classes.
	Unique, Exact, Near, MirrorSkipped int
	// Other counts robots_disallowed, not_html, error and unknown classes.
	Other int
	// DupRatio is (Exact+Near+MirrorSkipped) / (Unique+Exact+Near+MirrorSkipped):
	// the share of the host's HTML content that duplicated content seen
	// elsewhere, 0 when the host has no such pages.
	DupRatio float64
}

// Total returns the number of page records of the host.
func (r HostRow) Total() int {
	return r.Unique + r.Exact + r.Near + r.MirrorSkipped + r.Other
}

// PageHost returns p.Host, or the host of p.URL when p.Host is empty.
func PageHost(p *Page) string {
	if p.Host != "" {
		return p.Host
	}
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" {
		return "(unknown)"
	}
	return u.Host
}

// Hosts computes one row per host, sorted by host name in numeric-aware
// order, so that 10.0.0.9 sorts before 10.0.0.10 and host:8080 after host:443.
func Hosts(d *Data) []HostRow {
	if d == nil {
		return nil
	}
	idx := make(map[string]int)
	var rows []HostRow
	for i := range d.Pages {
		p := &d.Pages[i]
		h := PageHost(p)
		j, ok := idx[h]
		if !ok {
			j = len(rows)
			idx[h] = j
			rows = append(rows, HostRow{Host: h})
		}
		r := &rows[j]
		if p.Status > 0 {
			r.Fetched++
		}
		switch p.Class {
		case ClassUnique:
			r.Unique++
		case ClassExactDuplicate:
			r.Exact++
		case ClassNearDuplicate:
			r.Near++
		case ClassMirrorSkipped:
			r.MirrorSkipped++
		default:
			r.Other++
		}
	}
	for i := range rows {
		r := &rows[i]
		dup := r.Exact + r.Near + r.MirrorSkipped
		if den := dup + r.Unique; den > 0 {
			r.DupRatio = float64(dup) / float64(den)
		}
	}
	slices.SortFunc(rows, func(a, b HostRow) int { return naturalCompare(a.Host, b.Host) })
	return rows
}

// Cluster is a group of duplicates of one original page.
type Cluster struct {
	Representative string // URL of the original
	Members        []Page // every other page of the cluster
}

// Clusters groups the pages that name an original in DuplicateOf into
// connected components of the "is a duplicate of" edges (Broder, seed 002,
// section 2: a union-find over the pairs), as export's JSONL does: a mirror
// copy skipped in favour of a near duplicate is in the cluster of that near
// duplicate's original. The representative is the component's original: the
// URL no edge leaves (a page of class unique when there is one, else the
// smallest such URL; the smallest URL if every one names another). Clusters
// are sorted by size, largest first, then by representative URL; members by
// similarity, highest first, then by URL.
func Clusters(d *Data) []Cluster {
	if d == nil {
		return nil
	}
	parent := map[string]string{}
	var find func(u string) string
	find = func(u string) string {
		p, ok := parent[u]
		if !ok {
			parent[u] = u
			return u
		}
		if p == u {
			return u
		}
		r := find(p)
		parent[u] = r
		return r
	}
	names := map[string]bool{} // URLs of the pages that name an original
	unique := map[string]bool{}
	for _, p := range d.Pages {
		if p.Class == ClassUnique {
			unique[p.URL] = true
		}
		if p.DuplicateOf == "" {
			continue
		}
		names[p.URL] = true
		if a, b := find(p.URL), find(p.DuplicateOf); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	// The representative of each component, by root.
	rep := map[string]string{}
	better := func(u, than string) bool {
		if than == "" {
			return true
		}
		if (!names[u]) != (!names[than]) {
			return !names[u]
		}
		if unique[u] != unique[than] {
			return unique[u]
		}
		return u < than
	}
	for u := range parent {
		r := find(u)
		if better(u, rep[r]) {
			rep[r] = u
		}
	}
	idx := make(map[string]int)
	var out []Cluster
	for _, p := range d.Pages {
		if p.DuplicateOf == "" {
			continue
		}
		r := rep[find(p.URL)]
		if p.URL == r {
			continue // the representative itself, in a cycle of copies
		}
		j, ok := idx[r]
		if !ok {
			j = len(out)
			idx[r] = j
			out = append(out, Cluster{Representative: r})
		}
		out[j].Members = append(out[j].Members, p)
	}
	for i := range out {
		slices.SortFunc(out[i].Members, func(a, b Page) int {
			if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
				return c
			}
			return strings.Compare(a.URL, b.URL)
		})
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		if c := cmp.Compare(len(b.Members), len(a.Members)); c != 0 {
			return c
		}
		return strings.Compare(a.Representative, b.Representative)
	})
	return out
}

// CountClasses counts pages by class. The result holds all seven classes,
// with zero counts for the absent ones, plus any unknown class present.
func CountClasses(pages []Page) map[string]int {
	m := make(map[string]int, 7)
	for _, c := range Classes() {
		m[c] = 0
	}
	for i := range pages {
		m[pages[i].Class]++
	}
	return m
}

// RequestsSaved sums the requests saved by mirrors and replicated prefixes.
func RequestsSaved(d *Data) int {
	if d == nil {
		return 0
	}
	n := 0
	for _, m := range d.Mirrors {
		n += m.RequestsSaved
	}
	for _, m := range d.ReplicatedPrefixes {
		n += m.RequestsSaved
	}
	return n
}

// byClass returns the class counts to report: d.Stats.ByClass when the engine
// filled it in (completed with zeros for the seven classes), otherwise the
// counts derived from d.Pages.
func byClass(d *Data) map[string]int {
	if d.Stats.ByClass == nil {
		return CountClasses(d.Pages)
	}
	m := make(map[string]int, len(d.Stats.ByClass)+7)
	for _, c := range Classes() {
		m[c] = 0
	}
	for k, v := range d.Stats.ByClass {
		m[k] = v
	}
	return m
}

// classOrder returns the keys of counts: the seven classes in report order,
// then any unknown classes sorted by name.
func classOrder(counts map[string]int) []string {
	out := Classes()
	var extra []string
	for k := range counts {
		if !slices.Contains(out, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// naturalCompare compares strings so that runs of ASCII digits compare by
// numeric value: "10.0.0.9" < "10.0.0.10", "a2" < "a10". Strings that are
// equal under that order (e.g. "a01" and "a1") fall back to byte order, so the
// order is total.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if ca != cb {
			return cmp.Compare(ca, cb)
		}
		i++
		j++
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
