package mirror

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// The near-duplicate link monitor. A near-duplicate's links are not followed
// where its original's corresponding pages are known (the seeds' design):
// the copy's page at path p under a prefix pair stands for the original's
// page at p. When the two versions differ at some paths, the copy's pages
// there are lost, and nothing before the request can tell which paths they
// are. So a sample of the suppressed links is fetched: a link is picked
// when a hash of the seed and its pair of URLs falls below the sampling
// rate r (PickPair: deterministic, the same pick whichever side is the
// copy). A picked copy is fetched once its counterpart has content; when it
// turns out not to be a duplicate (the crawl keeps it as unique), the
// monitor fires for its prefix pair: every link suppressed under the pair
// is followed, and so are the ones its pages meet later.
//
// With D differing pages among the N suppressed under a pair, each picked
// independently with probability r:
//
//	P(no differing page is sampled)  = (1 - r)^D
//	expected pages lost              = D (1 - r)^D   (all D, unless one is sampled)
//	worst case over D                = about 1 / (e r), at D = 1 / r
//	extra requests with D = 0        = r N expected, at most the picked links
//
// and, once it fires, the pair's pages are all fetched (N requests). The
// loss counts the pages a suppressed link leads to directly; a page behind
// k suppressed links is sampled with probability r^k until the monitor
// fires (docs/DEDUP.md).

// Policy is what the crawl does with the copy side of a prefix pair
// (mirror.policy): skip its pages with the monitors (the default), verify a
// stated share of them, or fetch them all (detection only).
type Policy string

// The policies.
const (
	PolicySkip   Policy = "skip"
	PolicyVerify Policy = "verify"
	PolicyFetch  Policy = "fetch"
)

// LinkOptions are the near-duplicate link monitor's settings and the copy
// policy.
type LinkOptions struct {
	Policy      Policy
	LinkSample  float64 // r under PolicySkip: the share of suppressed links fetched as samples
	VerifyShare float64 // r under PolicyVerify: the share of the copy's pages fetched
	Seed        uint64  // the picks' seed
}

// DefaultLinkOptions are the defaults of configs/default.yaml.
func DefaultLinkOptions() LinkOptions {
	return LinkOptions{Policy: PolicySkip, LinkSample: 0.05, VerifyShare: 0.2, Seed: 1}
}

// Validate reports every invalid option at once.
func (o LinkOptions) Validate() error {
	var errs []error
	switch o.Policy {
	case PolicySkip, PolicyVerify, PolicyFetch:
	default:
		errs = append(errs, fmt.Errorf("mirror.policy must be skip, verify or fetch, got %q", o.Policy))
	}
	if !(o.LinkSample >= 0 && o.LinkSample <= 1) {
		errs = append(errs, fmt.Errorf("mirror.link_sample must be in [0, 1], got %v", o.LinkSample))
	}
	if !(o.VerifyShare > 0 && o.VerifyShare <= 1) {
		errs = append(errs, fmt.Errorf("mirror.verify_share must be in (0, 1], got %v", o.VerifyShare))
	}
	return errors.Join(errs...)
}

// Rate is the share of the copy's suppressed pages fetched under the
// policy: LinkSample, VerifyShare, or 1 when the copy is fetched.
func (o LinkOptions) Rate() float64 {
	switch o.Policy {
	case PolicyVerify:
		return o.VerifyShare
	case PolicyFetch:
		return 1
	}
	return o.LinkSample
}

// PickPair reports whether the pair of URLs a and b (a copy and its
// counterpart, in either order) is picked at rate r under seed: PickPath of
// the path the two share under their prefix pair (Infer). The pick is
// the same whichever side is the copy, and on whatever hosts and ports the
// two versions are served.
func PickPair(seed uint64, r float64, a, b string) bool {
	return PickPath(seed, r, SharedPath(a, b))
}

// SharedPath is the path that copy a and counterpart b share under the
// prefix pair Infer derives from them, without an HTML extension or a
// trailing index.html (one side may drop them): "x/p" for
// http://h1/v1/x/p.html and http://h2/v2/x/p.html. Two URLs with no
// shared path give their concatenation, in order.
func SharedPath(a, b string) string {
	if a > b {
		a, b = b, a
	}
	mp, ok := Infer(a, b)
	rest, under := strings.CutPrefix(a, mp.FromOrigin+mp.FromPrefix)
	if !ok || !under {
		return a + "\x00" + b
	}
	rest = strings.TrimSuffix(rest, "index.html")
	rest = strings.TrimSuffix(rest, "index.htm")
	for _, ext := range htmlExts {
		rest = strings.TrimSuffix(rest, ext)
	}
	return rest
}

// PickPath reports whether shared path rest is picked at rate r under
// seed: a hash of the two, uniform on [0, 1), below r.
func PickPath(seed uint64, r float64, rest string) bool {
	if r >= 1 {
		return true
	}
	h := uint64(14695981039346656037) ^ seed
	for i := 0; i < len(rest); i++ {
		h ^= uint64(rest[i])
		h *= 1099511628211
	}
	// splitmix64's finalizer: FNV's low bits alone are poorly mixed.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11)/(1<<53) < r
}

// MissProbability is the probability that none of d differing pages is
// picked at rate r: (1 - r)^d.
func MissProbability(r float64, d int) float64 { return math.Pow(1-r, float64(d)) }

// ExpectedLoss is the expected number of pages lost under a prefix pair
// with d differing pages, at rate r with a monitor that fires on the first
// differing page sampled: d (1 - r)^d.
func ExpectedLoss(r float64, d int) float64 { return float64(d) * MissProbability(r, d) }

// WorstExpectedLoss is the largest ExpectedLoss over d at rate r, and the d
// that gives it (about 1 / (e r) pages at d = 1 / r). It is 0 at r = 1 and
// unbounded (the pair's every differing page lost) at r = 0.
func WorstExpectedLoss(r float64) (float64, int) {
	if r >= 1 {
		return 0, 0
	}
	if r <= 0 {
		return math.Inf(1), 0
	}
	// d (1-r)^d rises up to d = -1 / ln(1 - r) and falls after it.
	peak := -1 / math.Log1p(-r)
	best, at := 0.0, 0
	for _, d := range []int{int(math.Floor(peak)), int(math.Ceil(peak))} {
		if d < 1 {
			d = 1
		}
		if l := ExpectedLoss(r, d); l > best {
			best, at = l, d
		}
	}
	return best, at
}

// LinkPair is the monitor's state for one prefix pair.
type LinkPair struct {
	Key     string  `json:"key"`
	Mapping Mapping `json:"mapping"`
	Sampled int     `json:"sampled"` // picked copies fetched and compared
	Events  int     `json:"events"`  // of them, not duplicates
	Fired   bool    `json:"fired"`   // the pair's links are followed
}

// LinkMonitor holds the near-duplicate link monitor's state per prefix
// pair. It is safe for concurrent use.
type LinkMonitor struct {
	o     LinkOptions
	mu    sync.Mutex
	pairs map[string]*LinkPair
}

// NewLinkMonitor returns a monitor with options o (checked by Validate).
func NewLinkMonitor(o LinkOptions) *LinkMonitor {
	return &LinkMonitor{o: o, pairs: map[string]*LinkPair{}}
}

// Options returns the monitor's options.
func (m *LinkMonitor) Options() LinkOptions { return m.o }

// Suppress reports whether the copy side's links may be left unfollowed at
// all: not under PolicyFetch.
func (m *LinkMonitor) Suppress() bool { return m.o.Policy != PolicyFetch }

// Pick reports whether the copy at copyURL, whose counterpart is origURL,
// is fetched as a sample at the policy's rate.
func (m *LinkMonitor) Pick(copyURL, origURL string) bool {
	return PickPair(m.o.Seed, m.o.Rate(), copyURL, origURL)
}

// Fired reports whether the monitor fired for prefix pair key.
func (m *LinkMonitor) Fired(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pairs[key]
	return p != nil && p.Fired
}

// Register makes prefix pair key (mapping mp) known to the monitor, with
// its first pick: Record and the caller's follow-up need its mapping. It
// returns the pair's state.
func (m *LinkMonitor) Register(key string, mp Mapping) LinkPair {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.pairLocked(key, mp)
}

func (m *LinkMonitor) pairLocked(key string, mp Mapping) *LinkPair {
	p := m.pairs[key]
	if p == nil {
		p = &LinkPair{Key: key, Mapping: mp}
		m.pairs[key] = p
	}
	return p
}

// Record records one sampled copy under prefix pair key (mapping mp):
// differs says it was not a duplicate. It reports whether the monitor fired
// now (the caller follows the pair's suppressed links).
func (m *LinkMonitor) Record(key string, mp Mapping, differs bool) (firedNow bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pairLocked(key, mp)
	p.Sampled++
	if !differs {
		return false
	}
	p.Events++
	if p.Fired {
		return false
	}
	p.Fired = true
	return true
}

// Restore sets a pair's state from a stored copy (a resumed crawl).
func (m *LinkMonitor) Restore(p LinkPair) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := p
	m.pairs[p.Key] = &cp
}

// Pair returns prefix pair key's state.
func (m *LinkMonitor) Pair(key string) (LinkPair, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pairs[key]
	if p == nil {
		return LinkPair{}, false
	}
	return *p, true
}

// Pairs returns every pair's state, by key.
func (m *LinkMonitor) Pairs() []LinkPair {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LinkPair, 0, len(m.pairs))
	for _, p := range m.pairs {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
