package mirror

import (
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
)

// Missing subtrees (issue 31, "dead links cost what they must").
//
// A partial mirror often lacks whole directories of its original (the man
// pages mirror without man2/ and man3/), or the original lacks one its copy
// still serves, while the pages of the lacking side go on linking into
// them: every such link costs a request that answers 404. Subtrees learns,
// from the answers, which directories one host lacks, as the parameter
// learner (frontier.ParamLearner) learns parameter traps: evidence,
// counter-evidence that ends the rule for good, and a decision at a fixed
// amount of evidence. The crawl then stops requesting URLs under a learned
// prefix on the side of a decided mirror that lacks it, and fetches the
// other side's page instead (crawl/mirror.go, skipMissing).
//
// The rule, per host and directory prefix (every directory of a URL's path,
// "http://h/a/" and "http://h/a/b/" for "http://h/a/b/c.html"):
//
//   - Evidence: a request under the prefix answered 404 or 410.
//   - Counter-evidence: a page served (2xx) under the prefix. It shows the
//     host holds the directory: it blocks the rule for good, and withdraws
//     it if it was decided already.
//   - Decision: SubtreeEvidence(ErrorRate, DeadRate) pieces of evidence and
//     no counter-evidence, that is, the first n answers under the prefix
//     were all "not found".
//
// The error rate. A wrong rule skips a directory the host holds. If the
// host holds it, each request under it answers "not found" with probability
// at most DeadRate (q0, the base rate of a dead link within a directory
// that exists), independently; the first n answers are all "not found" with
// probability at most q0^n. The smallest n with q0^n <= ErrorRate (alpha)
// is the rule's: n = ceil(ln alpha / ln q0). At the defaults, alpha = 0.001
// and q0 = 0.25 (a quarter of a live directory's links dead is far more
// than sites show; the corpus's man pages pair has none), n = 5: 0.25^5 =
// 0.00098. Scattered dead links never trigger the rule: a directory whose
// host served one page is blocked, and one whose links are dead in a share
// q <= q0 opens with n dead answers with probability at most alpha.
//
// What a wrong rule costs is bounded too: on a decided mirror the skipped
// URL's counterpart on the other side is fetched (or stands for it, on the
// mirror side), so a wrong rule loses only what the lacking side's page
// differs from its counterpart, and only when the counterpart exists.
//
// Known limits: the evidence of a rule not yet decided is kept in memory
// only (a resumed crawl gathers it again; decided rules are stored). Memory
// is bounded: past maxSubtreeRules prefixes with evidence, new ones are not
// tracked (never decided); past maxServedPrefixes prefixes with a served
// page (8 bytes each, hashed), no new rule is decided at all, as a served
// page could go unseen (the rule fails safe: it only costs requests). Once a rule is decided nothing more is requested under
// it on that host, so later counter-evidence comes only from pages in
// flight at the decision, or from a URL under the prefix fetched by another
// way (a redirect, a sitemap, a verification pick of a decided mirror).

// Defaults of SubtreeOptions (see above).
const (
	DefaultSubtreeErrorRate = 0.001
	DefaultDeadLinkRate     = 0.25
	maxSubtreeRules         = 1 << 16
	maxServedPrefixes       = 1 << 18
)

// SubtreeEvidence returns the evidence a missing subtree needs: the
// smallest n >= 1 with q0^n <= alpha, for an error rate alpha and a base
// rate q0 of dead links in a directory that exists (both in (0, 1)).
func SubtreeEvidence(alpha, q0 float64) int {
	if !(alpha > 0 && alpha < 1 && q0 > 0 && q0 < 1) {
		return 1
	}
	// The smallest n with q0^n <= alpha, up to rounding: 0.1^2 is
	// 0.010000000000000002 in floating point, and alpha = 0.01 takes 2.
	n := int(math.Ceil(math.Log(alpha)/math.Log(q0) - 1e-9))
	return max(n, 1)
}

// SubtreeOptions configures Subtrees. Zero fields take the defaults.
type SubtreeOptions struct {
	ErrorRate float64 // alpha: the probability of deciding a directory a host holds missing (default 0.001)
	DeadRate  float64 // q0: the base rate of a dead link in a directory that exists (default 0.25)
}

// SubtreeRule is what Subtrees knows about one prefix of one host.
type SubtreeRule struct {
	Prefix    string   `json:"prefix"`     // absolute URL of a directory, ending in '/'
	Lacks     int      `json:"lacks"`      // answers 404 or 410 under it
	Examples  []string `json:"examples"`   // the first of them (the decision's n)
	Decided   bool     `json:"decided"`    // the host lacks the subtree
	Withdrawn bool     `json:"withdrawn"`  // decided, then contradicted
	Counter   string   `json:"counter"`    // the page served under it that ended the rule
	Needed    int      `json:"needed"`     // the evidence the decision took (SubtreeEvidence)
	ErrorRate float64  `json:"error_rate"` // alpha
}

// Active reports whether the rule stops requests under its prefix.
func (r SubtreeRule) Active() bool { return r.Decided && !r.Withdrawn }

// Subtrees learns missing subtrees (see the rule above). It is pure (no
// I/O) and safe for concurrent use.
type Subtrees struct {
	o SubtreeOptions
	n int

	seed maphash.Seed

	mu     sync.Mutex
	rules  map[string]*SubtreeRule // prefix -> evidence, not blocked
	served map[uint64]struct{}     // prefixes under which a page was served (hashed)
	full   bool                    // served is full: no new decision
	active int                     // rules decided and standing
}

func (s *Subtrees) hash(prefix string) uint64 { return maphash.String(s.seed, prefix) }

// isServed reports whether a page was served under prefix. s.mu is held.
func (s *Subtrees) isServed(prefix string) bool {
	_, ok := s.served[s.hash(prefix)]
	return ok
}

// NewSubtrees returns an empty learner.
func NewSubtrees(o SubtreeOptions) *Subtrees {
	if o.ErrorRate <= 0 || o.ErrorRate >= 1 {
		o.ErrorRate = DefaultSubtreeErrorRate
	}
	if o.DeadRate <= 0 || o.DeadRate >= 1 {
		o.DeadRate = DefaultDeadLinkRate
	}
	return &Subtrees{o: o, n: SubtreeEvidence(o.ErrorRate, o.DeadRate), seed: maphash.MakeSeed(),
		rules: map[string]*SubtreeRule{}, served: map[uint64]struct{}{}}
}

// Needed is the evidence a decision takes.
func (s *Subtrees) Needed() int { return s.n }

// ErrorRate is the rule's alpha.
func (s *Subtrees) ErrorRate() float64 { return s.o.ErrorRate }

// Dirs returns the directory prefixes of absolute URL u, shortest first:
// "http://h/a/" and "http://h/a/b/" for "http://h/a/b/c.html" (and for
// "http://h/a/b/"). The root ("http://h/") is not one: a host that lacks
// everything is no mirror. Query and fragment are left out.
func Dirs(u string) []string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	o := originOf(u)
	if o == "" || len(o) >= len(u) {
		return nil
	}
	var out []string
	for i := len(o) + 1; i < len(u); i++ {
		if u[i] == '/' {
			out = append(out, u[:i+1])
		}
	}
	return out
}

// decide is the rule's one decision: enough evidence and no page served
// under the prefix (a blocked prefix has no rule to decide).
func (s *Subtrees) decide(r *SubtreeRule) bool {
	return !r.Decided && !s.full && r.Counter == "" && r.Lacks >= s.n
}

// Lack records that u answered 404 or 410. It returns the rules decided now.
// Recording one URL again adds nothing while its rule is undecided.
func (s *Subtrees) Lack(u string) []SubtreeRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SubtreeRule
	for _, p := range Dirs(u) {
		if s.isServed(p) {
			continue
		}
		r := s.rules[p]
		if r == nil {
			if len(s.rules) >= maxSubtreeRules {
				continue
			}
			r = &SubtreeRule{Prefix: p, Needed: s.n, ErrorRate: s.o.ErrorRate}
			s.rules[p] = r
		}
		// The same URL twice (a commit retried) is one piece of
		// evidence: the decision's n are distinct URLs.
		if slices.Contains(r.Examples, u) {
			continue
		}
		r.Lacks++
		if len(r.Examples) < s.n {
			r.Examples = append(r.Examples, u)
		}
		if s.decide(r) {
			r.Decided = true
			s.active++
			out = append(out, r.snapshot())
		}
	}
	return out
}

// Served records that u served a page. It returns the rules it withdrew.
func (s *Subtrees) Served(u string) []SubtreeRule {
	out, _ := s.ServedNew(u)
	return out
}

// ServedNew is Served, and returns besides the prefixes under which no
// page was known to be served before (for a store to keep: RestoreServed).
func (s *Subtrees) ServedNew(u string) (out []SubtreeRule, fresh []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range Dirs(u) {
		if s.isServed(p) {
			continue
		}
		r := s.rules[p]
		if len(s.served) >= maxServedPrefixes {
			s.full = true // a served page forgotten: no decision is safe
		} else {
			s.served[s.hash(p)] = struct{}{}
			fresh = append(fresh, p)
		}
		if r == nil {
			continue
		}
		delete(s.rules, p)
		r.Counter = u
		if r.Decided {
			r.Withdrawn = true
			s.active--
			out = append(out, r.snapshot())
		}
	}
	return out, fresh
}

// RestoreServed loads the prefixes a store kept from ServedNew: counter-
// evidence seen by an earlier run (a resumed crawl's requests are no
// sample of a directory: many are gap probes of the original's failures).
func (s *Subtrees) RestoreServed(prefixes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range prefixes {
		if len(s.served) >= maxServedPrefixes {
			s.full = true
			return
		}
		s.served[s.hash(p)] = struct{}{}
		if r := s.rules[p]; r != nil {
			if r.Active() {
				s.active--
			}
			delete(s.rules, p)
		}
	}
}

// Missing returns the standing rule whose prefix holds u, the shortest.
func (s *Subtrees) Missing(u string) (SubtreeRule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == 0 {
		return SubtreeRule{}, false
	}
	for _, p := range Dirs(u) {
		if r := s.rules[p]; r != nil && r.Active() {
			return r.snapshot(), true
		}
	}
	return SubtreeRule{}, false
}

// Restore loads rules a store kept (decided ones, standing or withdrawn).
func (s *Subtrees) Restore(rules []SubtreeRule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rules {
		if r.Withdrawn || r.Counter != "" {
			s.served[s.hash(r.Prefix)] = struct{}{}
			if old := s.rules[r.Prefix]; old != nil {
				if old.Active() {
					s.active--
				}
				delete(s.rules, r.Prefix)
			}
			continue
		}
		if s.isServed(r.Prefix) {
			continue
		}
		cp := r.snapshot()
		if old := s.rules[r.Prefix]; old != nil && old.Active() {
			s.active--
		}
		s.rules[r.Prefix] = &cp
		if cp.Active() {
			s.active++
		}
	}
}

// Rules returns the decided rules (standing or withdrawn are both kept by
// the caller's store; this returns the standing ones), sorted by prefix.
func (s *Subtrees) Rules() []SubtreeRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SubtreeRule
	for _, r := range s.rules {
		if r.Active() {
			out = append(out, r.snapshot())
		}
	}
	slices.SortFunc(out, func(a, b SubtreeRule) int { return strings.Compare(a.Prefix, b.Prefix) })
	return out
}

func (r *SubtreeRule) snapshot() SubtreeRule {
	out := *r
	out.Examples = slices.Clone(r.Examples)
	return out
}
