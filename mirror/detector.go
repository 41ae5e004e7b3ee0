package mirror

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Options configures mirror detection.
//
// A candidate (a pair of URL spaces under a path mapping) is decided by
// Wald's sequential probability ratio test over the paths present on both
// sides: each comparison is a Bernoulli trial, a match when the crawler's own
// duplicate decision calls the two pages duplicates. A mirror is a candidate
// whose share p of matching paths is at least MirrorShare; one whose share is
// at most OtherShare is not a mirror. The test decides a mirror with
// probability at most FalseMirror when p = OtherShare (less below it), and
// misses a mirror with probability at most MissedMirror when p = MirrorShare
// (less above it). docs/MIRRORS.md derives the defaults and the number of
// comparisons they take.
type Options struct {
	// MirrorShare (p1) is the share of shared paths whose pages are
	// duplicates on a mirror (default 0.8: seed 004's "for all (or most)
	// paths", most taken as four in five; an older snapshot whose changed
	// pages fall below the duplicate threshold is still a mirror).
	MirrorShare float64
	// OtherShare (p0) is the share at or below which a candidate is not a
	// mirror (default 0.5: a pair whose median page pair falls below the
	// duplicate threshold, such as two versions of one documentation set
	// with a median J around 0.88, has less than half of its pages within
	// the threshold, by the definition of the median).
	OtherShare float64
	// FalseMirror (alpha) and MissedMirror (beta) are the test's error rates
	// at OtherShare and MirrorShare (defaults 0.01 each).
	FalseMirror, MissedMirror float64
	// MaxCompared truncates the test (default 50): a candidate that crossed
	// neither bound after this many comparisons is decided by the sign of its
	// ratio, a mirror when the evidence leans that way. Undecided candidates
	// hold back their copy side, so the test must end; at 50 comparisons the
	// sign rule adds about one point to each error rate
	// (TestSequentialTestErrorRates). An undecided candidate also fetches at
	// most this many copies as samples.
	MaxCompared int
	// Sample is how many gap probes run at a time (default 10).
	Sample int
	// VerifyEvery keeps a verification stream after a decision: one in
	// VerifyEvery URLs that would be skipped is fetched and compared
	// (default 20). The stream runs the same test; when it shows the share at
	// OtherShare or below, the decision is withdrawn.
	VerifyEvery int
	// MaxCandidates bounds memory on sites with many duplicate pairs
	// (default 10000).
	MaxCandidates int
	// LossRate is the share of a decided mirror's skipped pages that may be
	// lost (default 0.001): pages whose counterpart on the original has a
	// Jaccard similarity below Represented. The loss monitor (Monitor)
	// stops skipping when the verification stream shows more.
	LossRate float64
}

// Represented is the Jaccard similarity at or above which a kept page
// represents a skipped one (issue 17's content-lost criterion, and the
// precision criterion of a dropped near duplicate).
const Represented = 0.80

// DefaultOptions returns the defaults (see docs/MIRRORS.md).
func DefaultOptions() Options {
	return Options{MirrorShare: 0.8, OtherShare: 0.5, FalseMirror: 0.01, MissedMirror: 0.01,
		MaxCompared: 50, Sample: 10, VerifyEvery: 20, MaxCandidates: 10000, LossRate: 0.001}
}

// Validate reports every invalid option at once.
func (o Options) Validate() error {
	var errs []error
	if !(o.OtherShare > 0 && o.OtherShare < o.MirrorShare && o.MirrorShare < 1) {
		errs = append(errs, fmt.Errorf("mirror shares must satisfy 0 < other_share (%g) < mirror_share (%g) < 1", o.OtherShare, o.MirrorShare))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"false_mirror", o.FalseMirror}, {"missed_mirror", o.MissedMirror}} {
		if !(r.v > 0 && r.v < 0.5) {
			errs = append(errs, fmt.Errorf("mirror.%s must be above 0 and below 0.5, got %g", r.name, r.v))
		}
	}
	if o.Sample < 1 || o.Sample > 10000 {
		errs = append(errs, fmt.Errorf("mirror.sample must be between 1 and 10000, got %d", o.Sample))
	}
	if o.MaxCompared < 1 {
		errs = append(errs, fmt.Errorf("mirror.max_compared must be >= 1, got %d", o.MaxCompared))
	}
	if !(o.LossRate > 0 && o.LossRate < 1-o.MirrorShare) {
		errs = append(errs, fmt.Errorf("mirror.loss_rate must be above 0 and below 1 - mirror_share (%g), got %g", 1-o.MirrorShare, o.LossRate))
	}
	if o.VerifyEvery < 2 {
		errs = append(errs, fmt.Errorf("mirror.verify_every must be >= 2, got %d", o.VerifyEvery))
	}
	return errors.Join(errs...)
}

// sprt holds the test's per-comparison log-likelihood ratios and its bounds.
type sprt struct {
	match, mismatch float64 // ln(p1/p0), ln((1-p1)/(1-p0))
	accept, reject  float64 // ln((1-beta)/alpha), ln(beta/(1-alpha))
}

func newSPRT(o Options) sprt {
	return sprt{
		match:    math.Log(o.MirrorShare / o.OtherShare),
		mismatch: math.Log((1 - o.MirrorShare) / (1 - o.OtherShare)),
		accept:   math.Log((1 - o.MissedMirror) / o.FalseMirror),
		reject:   math.Log(o.MissedMirror / (1 - o.FalseMirror)),
	}
}

func (t sprt) step(match bool) float64 {
	if match {
		return t.match
	}
	return t.mismatch
}

// Side names one side of a candidate.
type Side int

// The two sides of a candidate: A is the side first seen as the copy (the
// copy of the duplicate pair that proposed it, usually the side fetched
// second). Which side is the mirror is decided by evidence (Lack).
const (
	SideA Side = 0
	SideB Side = 1
)

// Candidate is a pair of origin+prefix spaces that may be copies of each
// other, with the evidence gathered so far. It is a value: Detector methods
// return snapshots.
type Candidate struct {
	Key      string `json:"key"`
	AOrigin  string `json:"a_origin"`
	APrefix  string `json:"a_prefix"`
	AExt     string `json:"a_ext,omitempty"` // the extension A's file names have where B's have BExt (Mapping.FromExt)
	BExt     string `json:"b_ext,omitempty"`
	Files    bool   `json:"files,omitempty"` // AExt and BExt come from a pair of files (not only directories)
	BOrigin  string `json:"b_origin"`
	BPrefix  string `json:"b_prefix"`
	Pairs    int    `json:"pairs"`    // duplicate pairs that proposed this mapping
	Compared int    `json:"compared"` // paths present on both sides that were compared
	Matched  int    `json:"matched"`
	Decided  bool   `json:"decided"`
	// LLR is the sequential test's log-likelihood ratio over the deciding
	// comparisons; VerifyLLR the verification stream's (see Options).
	LLR            float64 `json:"llr"`
	VerifyLLR      float64 `json:"verify_llr"`
	Withdrawn      bool    `json:"withdrawn,omitempty"`
	Mirror         Side    `json:"mirror_side"` // the side whose URLs are skipped (valid once decided)
	Verified       int     `json:"verified"`    // verification-stream comparisons after the decision
	VerifyMatched  int     `json:"verify_matched"`
	Sampled        int     `json:"sampled"`    // copies fetched (not skipped) to verify the candidate
	GapProbes      int     `json:"gap_probes"` // mirror pages fetched because the original lacked them
	GapResolved    int     `json:"gap_resolved"`
	LinkerResolved int     `json:"linker_resolved"`
	LinkerHits     int     `json:"linker_hits"`
	GapHits        int     `json:"gap_hits"` // ... that held new content
	CopiesA        int     `json:"copies_a"` // duplicate pairs whose copy (fetched second) was on side A
	CopiesB        int     `json:"copies_b"`
	FetchedA       int     `json:"fetched_a"`
	FetchedB       int     `json:"fetched_b"`
	// Link evidence (LinkEvidence) over the duplicate pairs seen: links of
	// the copies compared, and those that map onto their original's links.
	LinksCompared     int `json:"links_compared"`
	LinksMatched      int `json:"links_matched"`
	LinkDisagreements int `json:"link_disagreements,omitempty"` // pairs whose links did not map
	// The loss monitor (Monitor): verification-stream pairs whose pages are
	// below Represented, its statistic, and whether it stopped the skipping.
	LossEvents int     `json:"loss_events,omitempty"`
	LossStat   float64 `json:"loss_stat,omitempty"`
	Halted     bool    `json:"halted,omitempty"`
	// The comparisons made while the candidate was undecided whose pages
	// are below Represented, kept for the start of the verification stream
	// (Prior, MonitorPrior): the word counts of their original's pages (at
	// most priorMax).
	PriorLost []int `json:"prior_lost,omitempty"`
	// VerifyNext is how many of the next URLs the decision would skip are
	// verified before the stream goes on at one in VerifyEvery
	// (MonitorPrior).
	VerifyNext int `json:"verify_next,omitempty"`
	// What Represents needs from the pairs compared (systematic.go), kept
	// with the candidate so a resumed crawl judges skips as before.
	DiffSizes  []int `json:"diff_sizes,omitempty"`
	Systematic int   `json:"systematic,omitempty"`
	// The direction's evidence (Lack): the paths where side A (B) answered
	// 404 or 410 while the other side served a page, the same weighted
	// by the rate at which such paths are seen (LackWeightA, B), whether
	// that evidence (rather than the side first seen as the copy, on a
	// tie) chose the current direction, and how often the direction was
	// reversed after the decision.
	LacksA         int  `json:"lacks_a,omitempty"`
	LacksB         int  `json:"lacks_b,omitempty"`
	LackWeightA    int  `json:"lack_weight_a,omitempty"`
	LackWeightB    int  `json:"lack_weight_b,omitempty"`
	ByLacks        bool `json:"by_lacks,omitempty"`
	Swaps          int  `json:"swaps,omitempty"`
	sinceLastCheck int
}

// Lacks returns the paths side s lacked (it answered 404 or 410 where the
// other side served a page).
func (c *Candidate) Lacks(s Side) int {
	if s == SideA {
		return c.LacksA
	}
	return c.LacksB
}

func (c *Candidate) lackWeight(s Side) int {
	if s == SideA {
		return c.LackWeightA
	}
	return c.LackWeightB
}

// evidenceSide returns the side the lack evidence makes the mirror: the
// side that lacks more of what the other serves (weighted, Lack), and
// whether the evidence chose it; on a tie, side A (the side first seen as
// the copy).
func (c *Candidate) evidenceSide() (Side, bool) {
	a, b := c.LackWeightA, c.LackWeightB
	switch {
	case b > a:
		return SideB, true
	case a > b:
		return SideA, true
	}
	return SideA, false
}

// copySide is the side presumed the copy: the mirror side once decided,
// the side the evidence points to before.
func (c *Candidate) copySide() Side {
	if c.Decided {
		return c.Mirror
	}
	s, _ := c.evidenceSide()
	return s
}

// SameHost reports whether both sides are on one origin (a replicated
// prefix rather than a mirror host).
func (c *Candidate) SameHost() bool { return c.AOrigin == c.BOrigin }

// Score is the fraction of compared paths that matched.
func (c *Candidate) Score() float64 {
	if c.Compared == 0 {
		return 0
	}
	return float64(c.Matched) / float64(c.Compared)
}

// MirrorMapping returns the mapping from the mirror side onto the original.
func (c *Candidate) MirrorMapping() Mapping {
	if c.Mirror == SideA {
		return c.mapFrom(SideA)
	}
	return c.mapFrom(SideB)
}

func (c *Candidate) side(s Side) (origin, prefix, ext string) {
	if s == SideA {
		return c.AOrigin, c.APrefix, c.AExt
	}
	return c.BOrigin, c.BPrefix, c.BExt
}

// MapFrom returns the mapping from side s onto the other side.
func (c *Candidate) MapFrom(s Side) Mapping { return c.mapFrom(s) }

func (c *Candidate) mapFrom(s Side) Mapping {
	fo, fp, fe := c.side(s)
	to, tp, te := c.side(1 - s)
	return Mapping{FromOrigin: fo, FromPrefix: fp, ToOrigin: to, ToPrefix: tp, FromExt: fe, ToExt: te}
}

// Counterpart is u's corresponding URL under one candidate.
type Counterpart struct {
	Key  string // candidate key
	Side Side   // the side u is on
	URL  string // the URL on the other side
}

// Detector gathers path-overlap evidence and makes mirror decisions. It is
// safe for concurrent use.
type Detector struct {
	o        Options
	t        sprt
	m        monitor
	diffs    map[string]*diffCounts // per candidate: shingles its compared pairs differ in (systematic.go)
	mu       sync.Mutex
	cands    map[string]*Candidate
	byOrigin map[string][]*Candidate
	gaps     map[string]*gapState
	// linkRejected counts duplicate pairs that proposed no candidate because
	// their links did not map onto each other.
	linkRejected int
}

// LinkRejected is the number of duplicate pairs whose link evidence kept
// them from proposing a candidate.
func (d *Detector) LinkRejected() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.linkRejected
}

// NewDetector returns an empty detector.
func NewDetector(o Options) *Detector {
	d := DefaultOptions()
	if o.MirrorShare == 0 && o.OtherShare == 0 {
		o.MirrorShare, o.OtherShare = d.MirrorShare, d.OtherShare
	}
	if o.FalseMirror == 0 {
		o.FalseMirror = d.FalseMirror
	}
	if o.MissedMirror == 0 {
		o.MissedMirror = d.MissedMirror
	}
	if o.Sample <= 0 {
		o.Sample = d.Sample
	}
	if o.MaxCompared <= 0 {
		o.MaxCompared = d.MaxCompared
	}
	if o.VerifyEvery <= 0 {
		o.VerifyEvery = d.VerifyEvery
	}
	if o.LossRate <= 0 {
		o.LossRate = d.LossRate
	}
	if o.Validate() != nil {
		// Callers validate their configuration (Options.Validate); a
		// detector built anyway runs on the defaults.
		o.MirrorShare, o.OtherShare, o.FalseMirror, o.MissedMirror = d.MirrorShare, d.OtherShare, d.FalseMirror, d.MissedMirror
		o.Sample, o.MaxCompared, o.VerifyEvery, o.LossRate = d.Sample, d.MaxCompared, d.VerifyEvery, d.LossRate
	}
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = d.MaxCandidates
	}
	return &Detector{o: o, t: newSPRT(o), m: newMonitor(o), cands: map[string]*Candidate{}, byOrigin: map[string][]*Candidate{}}
}

// pairKey names the candidate of a mapping by its two URL spaces. The file
// names' extensions are not part of it: they are learnt from the first pair
// of files (Candidate.Files), which an index pair cannot tell.
func pairKey(m Mapping) string {
	x, y := m.FromOrigin+m.FromPrefix, m.ToOrigin+m.ToPrefix
	if y < x {
		x, y = y, x
	}
	return x + " <> " + y
}

// Propose records that the page at copyURL duplicates the page at origURL,
// and makes the prefix mapping they imply a candidate (or strengthens it).
// It returns the candidate's key, or "" if the pair implies no mapping (same
// URL space, or nothing in common).
func (d *Detector) Propose(copyURL, origURL string) string {
	return d.ProposeLinks(copyURL, origURL, 0, 0)
}

// MinLinks is the number of links a copy needs on its own origin for its
// link evidence to count (LinkEvidence).
const MinLinks = 3

// ProposeLinks is Propose with the pair's link evidence (LinkEvidence): a
// pair whose copy has at least MinLinks links, fewer than half of which map
// onto the original's links under the implied mapping, proposes nothing (a
// page copied into an unrelated site), and its evidence is added to an
// existing candidate without counting as one of its pairs.
func (d *Detector) ProposeLinks(copyURL, origURL string, linksCompared, linksMatched int) string {
	m, ok := Infer(copyURL, origURL)
	if !ok || m.Identity() || (m.SameHost() && m.FromPrefix == m.ToPrefix) {
		// One site serving a page under two names ("a" and "a.html") is
		// an alias, not a replicated prefix.
		return ""
	}
	key := pairKey(m)
	d.mu.Lock()
	defer d.mu.Unlock()
	disagree := linksCompared >= MinLinks && 2*linksMatched < linksCompared
	if c := d.cands[key]; c != nil {
		c.LinksCompared += linksCompared
		c.LinksMatched += linksMatched
		if disagree {
			c.LinkDisagreements++
			return ""
		}
		c.Pairs++
		onA := c.AOrigin == m.FromOrigin && c.APrefix == m.FromPrefix
		if onA {
			c.CopiesA++
		} else {
			c.CopiesB++
		}
		if !c.Files && fileNamed(copyURL) && fileNamed(origURL) {
			// The first pair of files tells how file names map (a copy
			// with extensionless URLs); directories could not.
			c.Files = true
			if onA {
				c.AExt, c.BExt = m.FromExt, m.ToExt
			} else {
				c.AExt, c.BExt = m.ToExt, m.FromExt
			}
		}
		return key
	}
	if len(d.cands) >= d.o.MaxCandidates {
		return ""
	}
	if disagree {
		d.linkRejected++
		return ""
	}
	c := &Candidate{Key: key, AOrigin: m.FromOrigin, APrefix: m.FromPrefix, AExt: m.FromExt,
		BOrigin: m.ToOrigin, BPrefix: m.ToPrefix, BExt: m.ToExt, Files: fileNamed(copyURL) && fileNamed(origURL),
		Pairs: 1, CopiesA: 1, LinksCompared: linksCompared, LinksMatched: linksMatched}
	d.add(c)
	return key
}

func (d *Detector) add(c *Candidate) {
	d.cands[c.Key] = c
	d.byOrigin[c.AOrigin] = append(d.byOrigin[c.AOrigin], c)
	if c.BOrigin != c.AOrigin {
		d.byOrigin[c.BOrigin] = append(d.byOrigin[c.BOrigin], c)
	}
}

// Origin returns the scheme://host[:port] part of an absolute URL, or "" if
// u has no scheme.
func Origin(u string) string { return originOf(u) }

func originOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(u[i+3:], '/')
	if j < 0 {
		return u
	}
	return u[:i+3+j]
}

// Counterparts returns u's corresponding URLs under every candidate whose
// either side contains u.
func (d *Detector) Counterparts(u string) []Counterpart {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Counterpart
	for _, c := range d.byOrigin[o] {
		for _, s := range []Side{SideA, SideB} {
			if cp, ok := c.mapFrom(s).Apply(u); ok {
				out = append(out, Counterpart{Key: c.Key, Side: s, URL: cp})
				break
			}
		}
	}
	return out
}

// Observe counts a fetched page at u for every candidate whose side holds it:
// when a candidate is decided, the side that is behind becomes the mirror.
func (d *Detector) Observe(u string) {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.byOrigin[o] {
		if _, ok := c.mapFrom(SideA).Apply(u); ok {
			c.FetchedA++
		} else if _, ok := c.mapFrom(SideB).Apply(u); ok {
			c.FetchedB++
		}
	}
}

// Event says what a comparison changed.
type Event int

// Events returned by Compare.
const (
	NoChange Event = iota
	DecidedNow
	WithdrawnNow
	// HaltedNow: the loss monitor stopped a decided mirror's skipping; the
	// decision stands (it is reported), the URLs skipped under it are queued
	// again and its pages are fetched from now on.
	HaltedNow
	// SwappedNow: a decided mirror's direction was reversed (Lack): the
	// former original is the mirror from now on.
	SwappedNow
)

// Compare records one comparison of a path present on both sides of
// candidate key: match means the crawler's duplicate decision calls the two
// pages duplicates (exact or near). verification says one of the two pages
// was fetched for the verification stream; after a decision only such
// comparisons count (pages fetched before the decision whose counterparts
// arrive later are no sample of what the decision skips).
//
// Each comparison adds its log-likelihood ratio to the candidate's test
// (Options): the candidate is decided a mirror (DecidedNow) when the ratio
// reaches the upper bound, and rejected (Withdrawn, WithdrawnNow: the URLs
// skipped while it was presumed are queued again) when it reaches the lower
// one. A rejected candidate's ratio is held at the lower bound and it goes on
// counting the comparisons the crawl makes anyway: a partial mirror whose
// first comparisons were its table-of-contents pages (which differ where the
// copy lacks sections) is decided once its ordinary pages have matched for
// as long as the test takes from the lower bound to the upper one (16
// matches in a row at the defaults). Only the paths both sides hold are
// compared, so the pages one side lacks do not count against it.
func (d *Detector) Compare(key string, match, verification bool) Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil {
		return NoChange
	}
	if c.Decided {
		if !verification {
			return NoChange
		}
		c.Verified++
		if match {
			c.VerifyMatched++
		}
		// The stream is an unbiased sample of what the decision skips (the
		// deciding comparisons were selected by passing the bound). It
		// runs the same test, held at the upper bound whenever it confirms
		// the mirror, so that a mirror that stops being one is noticed
		// after about as many comparisons as a fresh candidate takes to be
		// rejected, however long it was sound.
		c.VerifyLLR = min(c.VerifyLLR+d.t.step(match), d.t.accept)
		if c.VerifyLLR <= d.t.reject {
			c.Decided, c.Withdrawn = false, true
			c.LLR, c.VerifyLLR = d.t.reject, 0
			return WithdrawnNow
		}
		return NoChange
	}
	c.Compared++
	if match {
		c.Matched++
	}
	c.LLR = max(c.LLR+d.t.step(match), d.t.reject)
	// The truncated test: past MaxCompared, the sign decides (a candidate
	// rejected before goes on to the upper bound only).
	truncated := !c.Withdrawn && c.Compared >= d.o.MaxCompared
	switch {
	case c.LLR >= d.t.accept || (truncated && c.LLR > 0):
		c.Decided, c.Withdrawn = true, false
		// The verification stream starts with the first URL the decision
		// would skip, then one in VerifyEvery: a mirror with fewer skips
		// than VerifyEvery is verified too.
		c.sinceLastCheck = d.o.VerifyEvery - 1
		// The mirror is the side that lacks more of what the other serves
		// (Lack); on a tie (most often no evidence yet), the side of the
		// copy in the duplicate pair that proposed the candidate (usually
		// the seed fetched second). Later pairs are no guide: verification
		// samples on an idle mirror are often fetched before their
		// counterparts on a busy original.
		c.Mirror, c.ByLacks = c.evidenceSide()
		return DecidedNow
	case (c.LLR <= d.t.reject || truncated) && !c.Withdrawn:
		c.Withdrawn = true
		return WithdrawnNow
	}
	return NoChange
}

// SkipTarget reports whether u lies on the mirror side of a decided
// cross-host mirror, and returns its counterpart on the original. Same-host
// replicated prefixes are reported, never skipped: a site's versioned or
// translated copies may hold content the other prefix lacks.
func (d *Detector) SkipTarget(u string) (key, counterpart string, ok bool) {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *Candidate
	for _, c := range d.byOrigin[o] {
		if !c.Decided || c.Halted || c.SameHost() {
			continue
		}
		if _, ok := c.MirrorMapping().Apply(u); ok && (best == nil || betterSupported(c, best)) {
			best = c
		}
	}
	if best == nil {
		return "", "", false
	}
	cp, _ := best.MirrorMapping().Apply(u)
	return best.Key, cp, true
}

// Skip counts a URL skipped under candidate key, or returns false when this
// URL is to be fetched as part of the verification stream instead.
func (d *Detector) Skip(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || !c.Decided || c.Halted {
		return false
	}
	if c.VerifyNext > 0 {
		c.VerifyNext--
		c.sinceLastCheck = 0
		return false
	}
	c.sinceLastCheck++
	if c.sinceLastCheck >= d.o.VerifyEvery {
		c.sinceLastCheck = 0
		return false
	}
	return true
}

// CopyMapping returns the mapping from u's side onto the other side of a
// cross-host candidate on whose copy side (the side of the first copy found)
// u lies, decided or not. While a candidate is being verified, pages on its
// copy side are presumed copies: their links are handled like a duplicate's,
// so the copy host does not expand before the evidence is in.
func (d *Detector) CopyMapping(u string) (Mapping, bool) {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	// Several candidates may cover u's prefix (a site's copy is often also
	// near some other build of it): the best supported one wins, decided
	// first, then by matched paths, then by duplicate pairs.
	var best *Candidate
	for _, c := range d.byOrigin[o] {
		if c.Withdrawn || c.Halted || c.SameHost() {
			continue
		}
		if _, ok := c.mapFrom(c.copySide()).Apply(u); !ok {
			continue
		}
		if best == nil || betterSupported(c, best) {
			best = c
		}
	}
	if best == nil {
		return Mapping{}, false
	}
	return best.mapFrom(best.copySide()), true
}

// CopySide returns the side of candidate key presumed the copy: its mirror
// side once decided, before that the side the lack evidence points to
// (Lack), side A on a tie.
func (d *Detector) CopySide(key string) Side {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cands[key]; c != nil {
		return c.copySide()
	}
	return SideA
}

// Lack records a path where side s of candidate key answered 404 or 410
// while the other side served a page: evidence that s holds less of the
// shared content. The original of a mirror is the side that holds more, so
// the decision (Compare) makes the side with the greater weight of lacks
// the mirror, and Lack reverses a decided direction (SwappedNow) when the
// evidence turns.
//
// Weights: a lack counts 1, except one of the mirror side of a decided
// mirror whose skipping runs, which counts VerifyEvery. Before the decision
// both sides are fetched, and after it every failure of the original is
// probed on the mirror (gap probes), so each lack of those is seen; but the
// mirror's own pages are fetched only as the verification stream's picks,
// one in VerifyEvery, so each lack seen there stands for VerifyEvery. (A
// lack of the mirror seen otherwise after the decision, such as a page
// fetched before it whose counterpart arrives later, weighs VerifyEvery
// too: the error keeps a decided direction, never reverses it.)
//
// The swap rule: a decided direction is reversed when the original's
// weight is more than twice the mirror's. The factor is hysteresis: right
// after a swap the new mirror's weight w is over twice the new original's,
// and swapping back needs the new original's weight above 2w, so the
// weights' total at least doubles between two swaps (it is over 3w at the
// swap back, while it was under 1.5w at the swap). Weights only grow and
// are bounded by VerifyEvery times the paths, so a candidate swaps at most
// 1 + log2(VerifyEvery x paths) times: the direction cannot thrash.
func (d *Detector) Lack(key string, s Side) Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil {
		return NoChange
	}
	w := 1
	if c.Decided && !c.Halted && s == c.Mirror {
		w = d.o.VerifyEvery
	}
	if s == SideA {
		c.LacksA++
		c.LackWeightA += w
	} else {
		c.LacksB++
		c.LackWeightB += w
	}
	if !c.Decided || !swapDue(c) {
		return NoChange
	}
	c.Mirror = 1 - c.Mirror
	c.ByLacks = true
	c.Swaps++
	return SwappedNow
}

// swapDue reports whether a decided candidate's original lacks clearly more
// than its mirror (Lack).
func swapDue(c *Candidate) bool {
	return c.lackWeight(1-c.Mirror) > 2*c.lackWeight(c.Mirror)
}

func betterSupported(a, b *Candidate) bool {
	if a.Decided != b.Decided {
		return a.Decided
	}
	if a.LLR != b.LLR {
		return a.LLR > b.LLR
	}
	return a.Pairs > b.Pairs
}

// CopyOf returns the copy-side URL corresponding to u on the original side
// of a decided cross-host mirror, and the candidate's key. When u fails on
// the original, its copy may hold the page the original lacks.
func (d *Detector) CopyOf(u string) (copyURL, key string, ok bool) {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.byOrigin[o] {
		if !c.Decided || c.SameHost() {
			continue
		}
		if cu, ok := c.mapFrom(1 - c.Mirror).Apply(u); ok {
			return cu, c.Key, true
		}
	}
	return "", "", false
}

// Gap is a mirror URL worth a request because the original lacks something:
// the copy of a page that failed on the original, or the copy of a page that
// linked to it (which evidently differs from the original's version).
type Gap struct {
	URL   string
	Via   string
	Depth int
	// Linker marks the copy of a page that linked to what the original
	// lacks (rather than the copy of the missing page itself). Such probes
	// go after the direct ones: they find new content less often.
	Linker bool
}

type gapState struct {
	direct, linkers []Gap
	outstanding     int
	linkersOut      int // linker probes outstanding (at most Sample/2)
}

// maxGapBacklog bounds the backlog kept per candidate.
const maxGapBacklog = 100000

// AddGap queues a gap probe for candidate key (a decided mirror).
func (d *Detector) AddGap(key string, g Gap) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || !c.Decided || d.gapsExhausted(c) {
		return
	}
	st := d.gapsOf(key)
	if len(st.direct)+len(st.linkers) >= maxGapBacklog {
		return
	}
	if g.Linker {
		st.linkers = append(st.linkers, g)
	} else {
		st.direct = append(st.direct, g)
	}
}

// NextGaps returns the gap probes to issue now: at most Sample outstanding,
// direct ones first, and none once 2 x Sample probes have resolved with fewer
// than one in five finding new content (a mirror with the same broken links as its original
// then stops costing requests; one that holds what the original lacks keeps
// being probed).
func (d *Detector) NextGaps(key string) []Gap {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	st := d.gaps[key]
	if c == nil || st == nil {
		return nil
	}
	if d.gapsExhausted(c) {
		st.direct, st.linkers = nil, nil
		return nil
	}
	if c.LinkerResolved >= d.o.Sample && c.LinkerHits*5 < c.LinkerResolved {
		st.linkers = nil // the linking pages' copies keep being the same
	}
	var out []Gap
	for st.outstanding < d.o.Sample {
		var g Gap
		switch {
		case len(st.direct) > 0:
			g, st.direct = st.direct[0], st.direct[1:]
		case len(st.linkers) > 0 && st.linkersOut < d.o.Sample/2:
			g, st.linkers = st.linkers[0], st.linkers[1:]
			st.linkersOut++
		default:
			return out
		}
		out = append(out, g)
		st.outstanding++
		c.GapProbes++
	}
	return out
}

// GapResult records whether a gap probe (linker or direct) found new content.
func (d *Detector) GapResult(key string, linker, hit bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil {
		return
	}
	c.GapResolved++
	if hit {
		c.GapHits++
	}
	if linker {
		c.LinkerResolved++
		if hit {
			c.LinkerHits++
		}
	}
	d.release(key, linker)
}

// GapUnissued tells the detector that a probe NextGaps returned was not sent
// (its URL was known already), so it does not count as outstanding.
func (d *Detector) GapUnissued(key string, linker bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cands[key]; c != nil {
		c.GapProbes--
	}
	d.release(key, linker)
}

func (d *Detector) release(key string, linker bool) {
	st := d.gaps[key]
	if st == nil {
		return
	}
	if st.outstanding > 0 {
		st.outstanding--
	}
	if linker && st.linkersOut > 0 {
		st.linkersOut--
	}
}

func (d *Detector) gapsOf(key string) *gapState {
	if d.gaps == nil {
		d.gaps = map[string]*gapState{}
	}
	st := d.gaps[key]
	if st == nil {
		st = &gapState{}
		d.gaps[key] = st
	}
	return st
}

func (d *Detector) gapsExhausted(c *Candidate) bool {
	return c.GapResolved >= 2*d.o.Sample && c.GapHits*5 < c.GapResolved
}

// Key returns the candidate key of a mapping (either direction).
func Key(m Mapping) string { return pairKey(m) }

// WantSample reports whether a copy under candidate key should be fetched
// rather than skipped, to verify the candidate: while it is undecided (and
// not rejected), up to MaxCompared copies are fetched (some counterparts turn
// out missing, and a partial mirror's first samples may be pages that differ).
// The test is truncated at MaxCompared comparisons, so a candidate does not
// stay undecided with its copy side held back.
func (d *Detector) WantSample(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || !d.sampling(c) {
		return false
	}
	c.Sampled++
	return true
}

// MaxCompared is Options.MaxCompared: the samples an undecided candidate
// fetches at most.
func (d *Detector) MaxCompared() int { return d.o.MaxCompared }

// WantsSamples reports whether some undecided candidate could use a sample
// compared with origURL, a page just fetched on either of its sides: a copy
// waiting on origURL may then be fetched (SampleKey says under which).
func (d *Detector) WantsSamples(origURL string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.samplingCandidate(origURL, func(string) bool { return true }) != nil
}

// SampleKey returns the undecided candidate, under its sample cap, that maps
// copyURL (skipped while its counterpart origURL was queued) onto origURL,
// in either direction. The caller fetches the copy and then counts the sample
// with WantSample(key) (samples are counted only when really fetched).
func (d *Detector) SampleKey(copyURL, origURL string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.samplingCandidate(copyURL, func(cp string) bool { return cp == origURL }); c != nil {
		return c.Key, true
	}
	return "", false
}

// samplingCandidate returns the first candidate taking samples that maps u,
// from either side, onto a URL want accepts. d.mu is held.
func (d *Detector) samplingCandidate(u string, want func(mapped string) bool) *Candidate {
	for _, c := range d.byOrigin[originOf(u)] {
		if !d.sampling(c) {
			continue
		}
		for _, s := range []Side{SideA, SideB} {
			if m, ok := c.mapFrom(s).Apply(u); ok && want(m) {
				return c
			}
		}
	}
	return nil
}

// sampling reports whether c is undecided, not rejected and under its cap
// of MaxCompared samples.
func (d *Detector) sampling(c *Candidate) bool {
	return !c.Decided && !c.Withdrawn && c.Sampled < d.o.MaxCompared
}

// Candidate returns a snapshot of one candidate.
func (d *Detector) Candidate(key string) (Candidate, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil {
		return Candidate{}, false
	}
	out := *c
	if dc := d.diffs[key]; dc != nil {
		out.DiffSizes = slices.Clone(dc.sizes)
		out.Systematic = max(dc.systematic, dc.restored)
	}
	return out, true
}

// Candidates returns snapshots of all candidates, sorted by key.
func (d *Detector) Candidates() []Candidate {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Candidate, 0, len(d.cands))
	for _, c := range d.cands {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Restore loads candidates saved from an earlier run.
func (d *Detector) Restore(cs []Candidate) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range cs {
		c := cs[i]
		if c.Key == "" || c.AOrigin == "" || c.BOrigin == "" {
			return fmt.Errorf("mirror: bad candidate %+v", c)
		}
		d.restoreDiffs(c)
		if old := d.cands[c.Key]; old != nil {
			*old = c
			continue
		}
		d.add(&c)
	}
	return nil
}

// Qualified reports whether a same-host candidate has enough evidence to be
// reported as a replicated prefix (it is never acted on): the test decided it.
func (d *Detector) Qualified(c Candidate) bool {
	return c.Decided || (!c.Withdrawn && c.LLR >= d.t.accept)
}

// Across returns u's counterpart on the other side of the best supported
// cross-host candidate that holds u and is not rejected (decided first),
// its key, the head (origin and prefix) of u's side, and whether u lies on
// the side presumed the copy (the mirror side once decided). Missing
// subtrees (Subtrees) are skipped in favour of it.
func (d *Detector) Across(u string) (key, counterpart, head string, onCopy, ok bool) {
	o := originOf(u)
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *Candidate
	var side Side
	for _, c := range d.byOrigin[o] {
		if c.Withdrawn || c.Halted || c.SameHost() {
			continue
		}
		for _, s := range []Side{SideA, SideB} {
			if _, ok := c.mapFrom(s).Apply(u); ok {
				if best == nil || betterSupported(c, best) {
					best, side = c, s
				}
				break
			}
		}
	}
	if best == nil {
		return "", "", "", false, false
	}
	mp := best.mapFrom(side)
	cp, _ := mp.Apply(u)
	return best.Key, cp, mp.FromOrigin + mp.FromPrefix, side == best.copySide(), true
}
