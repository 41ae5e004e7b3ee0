package frontier

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// Learned irrelevant parameters (issue 16: "session ids are an endless trap").
//
// A shop that puts a fresh session id into every link it serves ("/a?visit=R", R new on
// each response) offers an endless supply of new URLs for a handful of pages. The seen-set
// cannot stop it, and max_depth only bounds it by fan-out^depth. Canonicalize strips the
// session parameters everyone knows (session.go); ParamLearner learns the others from what
// the crawl fetches: two pages whose URLs differ only in the value of one parameter, with
// the same text, say that the parameter did not matter there.
//
// The rule, per host and parameter name (a query parameter "visit", a path parameter
// ";visit", or a path segment "/sess/*/", which needs more: segments.go):
//
//   - Evidence: an exact duplicate whose URL equals an earlier page of the same exact
//     cluster (the original or another copy of it) except for the value of that one
//     parameter: same host, same path, the same other parameters in any order.
//   - Counter-evidence: two pages with different text (different exact clusters; neither
//     a near duplicate) whose URLs differ only in that parameter's value, or only in its
//     presence. It shows the parameter selects content on this host; it blocks the rule
//     for good, and withdraws it if it was decided already.
//   - Decision: at least MinPairs pieces of evidence on at least MinPaths different URL
//     skeletons (path plus other parameters), and no counter-evidence.
//
// The error trade-off. A wrong rule loses content: every URL whose value of the
// parameter would have selected another page is canonicalized onto one already seen and
// never fetched. A late rule costs requests: in a trap, about one fetch per piece of
// evidence plus the links queued before the decision, a bounded number. The first error
// is permanent and silent, the second is small and bounded, so the threshold leans to
// the late side. One pair is a coincidence easily met by a parameter that matters: two
// invalid ids both answered with the same "not found" text, a page that ignores a
// parameter its neighbours use. Requiring the coincidence three times, on two different
// pages, with no page of the host ever contradicting it, leaves mostly parameters that
// are ignored systematically; the cost is three or four more fetches per trap. A
// parameter that is present on one URL and absent on its twin is counter-evidence
// only, never evidence: "/list" and "/list?page=1" are the same page on many sites
// while "page" matters very much.
//
// Known limits: the evidence of a rule not yet decided is kept in memory only (a
// resumed crawl gathers it again; decided and blocked rules are stored), a session
// parameter whose value is also printed in the page text makes near duplicates, which
// are neither evidence nor counter-evidence, and once a rule is decided no URL that
// differs in the parameter is fetched, so later counter-evidence can only come from
// pages in flight at the decision.

// Defaults of ParamOptions.
const (
	DefaultParamMinPairs   = 3
	DefaultParamMinPaths   = 2
	DefaultParamMaxEntries = 1 << 19
	DefaultSegMinValues    = 32
	DefaultSegMinPaths     = 3
	paramMaxExamples       = 5
)

// ParamOptions configures a ParamLearner. Zero fields take the defaults.
type ParamOptions struct {
	MinPairs   int // evidence pairs needed for a rule (default 3)
	MinPaths   int // distinct URL skeletons among them (default 2)
	MaxEntries int // URL skeletons remembered, over two generations (default 512 Ki: about 50 MB)
	// A path segment rule (segments.go) needs, besides MinPairs, SegMinPaths
	// distinct skeletons among its pairs and SegMinValues distinct values
	// seen at its position (defaults 3 and 32).
	SegMinPaths  int
	SegMinValues int
}

// ParamPair is one piece of evidence: two fetched URLs that differ only in the
// parameter, and hold the same text (evidence) or different text (counter-evidence).
type ParamPair struct {
	URL   string `json:"url"`
	Other string `json:"other"`
}

// ParamRule is what the learner knows about one parameter of one host. It is the
// record the crawl stores (evidence kind "param") and reports.
type ParamRule struct {
	Host      string      `json:"host"`
	Param     string      `json:"param"`             // query parameter name, ";name" for a path parameter, "/prefix/*/" for a path segment
	Value     string      `json:"value,omitempty"`   // a path segment rule: the value every URL's segment is set to
	Pairs     int         `json:"pairs"`             // pieces of evidence
	Paths     int         `json:"paths"`             // distinct URL skeletons among them
	Examples  []ParamPair `json:"examples"`          // the first few pieces of evidence
	Decided   bool        `json:"decided"`           // the parameter is stripped on this host
	Withdrawn bool        `json:"withdrawn"`         // decided, then contradicted
	Counter   *ParamPair  `json:"counter,omitempty"` // the counter-evidence that blocks the rule
}

// Active reports whether the rule strips its parameter.
func (r ParamRule) Active() bool { return r.Decided && !r.Withdrawn }

// Key is the rule's storage key: host and parameter.
func (r ParamRule) Key() string { return r.Host + " " + r.Param }

// ParamLearner decides which parameters are irrelevant on which host, from the exact
// duplicates a crawl finds (see the rule above), and canonicalizes URLs without them.
// It is pure (no I/O) and safe for concurrent use.
type ParamLearner struct {
	o    ParamOptions
	seed maphash.Seed

	mu       sync.RWMutex
	cur, old *paramGen             // URL skeletons remembered: the current generation and the one before
	cands    map[string]*paramCand // ParamRule.Key() -> state
	perHost  map[string]int        // host -> parameters tracked in cands
	active   map[string][]string   // host -> parameters stripped
	segs     map[string]*segPos    // host and segment name -> values seen there (segments.go)
	segHost  map[string]int        // host -> positions in segs
}

// paramGen is one generation of remembered URL skeletons. When the current one holds
// MaxEntries/2 entries, the previous one is dropped: memory stays bounded, and a trap,
// whose twins arrive close together, is still caught late in a long crawl.
type paramGen struct {
	holes   map[uint64]paramEntry // URL with one parameter's value taken out -> first page seen
	fulls   map[uint64]paramEntry // URL skeleton -> first page seen
	without map[uint64]paramEntry // URL with one parameter taken out -> first page seen (name in param)
}

func newParamGen() *paramGen {
	return &paramGen{holes: map[uint64]paramEntry{}, fulls: map[uint64]paramEntry{}, without: map[uint64]paramEntry{}}
}

func (g *paramGen) size() int { return len(g.holes) + len(g.fulls) + len(g.without) }

// get looks key up in the current generation, then in the previous one.
func (l *ParamLearner) get(pick func(*paramGen) map[uint64]paramEntry, key uint64) (paramEntry, bool) {
	if e, ok := pick(l.cur)[key]; ok {
		return e, true
	}
	e, ok := pick(l.old)[key]
	return e, ok
}

// put remembers key in the current generation unless it is known.
func (l *ParamLearner) put(pick func(*paramGen) map[uint64]paramEntry, key uint64, e paramEntry) {
	if _, ok := l.get(pick, key); ok {
		return
	}
	if l.cur.size() >= l.o.MaxEntries/2 {
		l.old, l.cur = l.cur, newParamGen()
	}
	pick(l.cur)[key] = e
}

func holesOf(g *paramGen) map[uint64]paramEntry   { return g.holes }
func fullsOf(g *paramGen) map[uint64]paramEntry   { return g.fulls }
func withoutOf(g *paramGen) map[uint64]paramEntry { return g.without }

type paramEntry struct {
	cluster uint64
	value   uint64 // hash of the value (holes)
	param   string // the parameter taken out (without)
	url     string
}

type paramCand struct {
	rule  ParamRule
	paths map[uint64]struct{}
}

// NewParamLearner returns an empty learner.
func NewParamLearner(o ParamOptions) *ParamLearner {
	if o.MinPairs <= 0 {
		o.MinPairs = DefaultParamMinPairs
	}
	if o.MinPaths <= 0 {
		o.MinPaths = DefaultParamMinPaths
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultParamMaxEntries
	}
	if o.SegMinPaths <= 0 {
		o.SegMinPaths = DefaultSegMinPaths
	}
	if o.SegMinValues <= 0 {
		o.SegMinValues = DefaultSegMinValues
	}
	return &ParamLearner{o: o, seed: maphash.MakeSeed(), cur: newParamGen(), old: newParamGen(),
		cands: map[string]*paramCand{}, perHost: map[string]int{}, active: map[string][]string{},
		segs: map[string]*segPos{}, segHost: map[string]int{}}
}

// paramSlot is one parameter of a URL: its name (";name" for a path parameter), its
// value, the URL's skeleton with the value taken out (hole) and with the whole
// parameter taken out (without).
type paramSlot struct {
	name, value   string
	hole, without string
}

// isSegment reports whether a rule's name is a path segment's ("/prefix/*/").
func isSegment(name string) bool { return strings.HasPrefix(name, "/") }

// paramSplit takes a canonical URL apart: its host key, its skeleton (host, path and
// sorted query pieces) and its parameters. ok is false for a URL without an authority.
func paramSplit(u string) (host, full string, slots []paramSlot, ok bool) {
	_, authority, ok := canonSplitAuthority(u)
	if !ok {
		return "", "", nil, false
	}
	host = HostKey(u)
	rest := u[strings.Index(u, "://")+3+len(authority):]
	path, query, _ := strings.Cut(rest, "?")
	var pieces []string
	for p := range strings.SplitSeq(query, "&") {
		if p != "" {
			pieces = append(pieces, p)
		}
	}
	sorted := slices.Sorted(slices.Values(pieces))
	skel := func(path string, pieces []string) string {
		return host + "\x00" + path + "\x00" + strings.Join(pieces, "&")
	}
	full = skel(path, sorted)
	for i, p := range sorted {
		if i > 0 && sorted[i-1] == p {
			continue // a repeated piece: taking one out leaves the other
		}
		name, value, _ := strings.Cut(p, "=")
		others := slices.Delete(slices.Clone(sorted), i, i+1)
		slots = append(slots, paramSlot{name: name, value: value,
			hole: skel(path, others) + "\x00?" + name, without: skel(path, others)})
	}
	for i := 0; i < len(path); i++ {
		if path[i] != ';' {
			continue
		}
		end := i + 1
		for end < len(path) && path[end] != ';' && path[end] != '/' {
			end++
		}
		name, value, _ := strings.Cut(path[i+1:end], "=")
		vstart := i + 1 + len(name)
		slots = append(slots, paramSlot{name: ";" + name, value: value,
			hole:    skel(path[:vstart]+"\x01"+path[end:], sorted) + "\x00;" + name,
			without: skel(path[:i]+path[end:], sorted)})
		i = end - 1
	}
	for name, parts := range sessionSegments(path) {
		prefix, value, rest := parts[0], parts[1], parts[2]
		slots = append(slots, paramSlot{name: name, value: value,
			hole:    skel(prefix+"\x01/"+rest, sorted) + "\x00" + name,
			without: skel(prefix+rest, sorted)})
	}
	return host, full, slots, true
}

func (l *ParamLearner) hash(kind byte, s string) uint64 {
	var h maphash.Hash
	h.SetSeed(l.seed)
	h.WriteByte(kind)
	h.WriteString(s)
	return h.Sum64()
}

// Observe records a fetched page with text: its canonical URL u, its exact cluster
// (the page's own id for a unique page, its original's id for an exact duplicate) and
// the canonical links it offers (only their path segments' values are counted, see
// segments.go). Near duplicates are not observed. It returns the rules that changed in
// a way a store must keep: newly decided, newly blocked or withdrawn by
// counter-evidence. Observing the same URL twice has no further effect.
func (l *ParamLearner) Observe(u string, cluster uint64, links []string) []ParamRule {
	host, full, slots, ok := paramSplit(u)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var changed []ParamRule
	note := func(r *ParamRule) {
		if r != nil {
			changed = append(changed, *r)
		}
	}
	note(l.countSegments(u))
	for _, link := range links {
		note(l.countSegments(link))
	}
	for _, s := range slots {
		hk := l.hash('h', s.hole)
		vh := l.hash('v', s.value)
		if e, ok := l.get(holesOf, hk); ok {
			if e.value != vh && e.url != u {
				if e.cluster == cluster {
					note(l.evidence(host, s.name, s.value, hk, ParamPair{URL: u, Other: e.url}))
				} else {
					note(l.counter(host, s.name, ParamPair{URL: u, Other: e.url}))
				}
			}
		} else {
			l.put(holesOf, hk, paramEntry{cluster: cluster, value: vh, url: u})
		}
		// A page just like this one but without the parameter.
		wk := l.hash('f', s.without)
		if e, ok := l.get(fullsOf, wk); ok && e.cluster != cluster {
			note(l.counter(host, s.name, ParamPair{URL: u, Other: e.url}))
		}
		l.put(withoutOf, wk, paramEntry{cluster: cluster, param: s.name, url: u})
	}
	// A page just like this one but with one more parameter.
	fk := l.hash('f', full)
	if e, ok := l.get(withoutOf, fk); ok && e.cluster != cluster && e.url != u {
		note(l.counter(host, e.param, ParamPair{URL: u, Other: e.url}))
	}
	l.put(fullsOf, fk, paramEntry{cluster: cluster, url: u})
	return changed
}

// Bounds on the parameters tracked: a host whose links carry a new parameter
// name on every page must not grow the learner (nor the store's "param"
// records) with each. Past them, new names are not tracked; rules already
// tracked go on.
const (
	paramMaxPerHost = 64
	paramMaxTotal   = 1 << 16
)

// cand returns the state of (host, name), or nil when it is not tracked and
// the bounds are reached (fresh: Restore tracks stored rules whatever the bounds).
func (l *ParamLearner) cand(host, name string) *paramCand {
	return l.candBounded(host, name, true)
}

func (l *ParamLearner) candBounded(host, name string, bounded bool) *paramCand {
	key := host + " " + name
	c := l.cands[key]
	if c == nil {
		if bounded && (len(l.cands) >= paramMaxTotal || l.perHost[host] >= paramMaxPerHost) {
			return nil
		}
		c = &paramCand{rule: ParamRule{Host: host, Param: name}, paths: map[uint64]struct{}{}}
		l.cands[key] = c
		l.perHost[host]++
	}
	return c
}

// evidence adds one pair for (host, name), value being the parameter's value in p.URL;
// it returns the rule when it is decided now.
func (l *ParamLearner) evidence(host, name, value string, skeleton uint64, p ParamPair) *ParamRule {
	c := l.cand(host, name)
	if c == nil {
		return nil
	}
	r := &c.rule
	if r.Counter != nil {
		return nil
	}
	r.Pairs++
	c.paths[skeleton] = struct{}{}
	r.Paths = len(c.paths)
	if len(r.Examples) < paramMaxExamples {
		r.Examples = append(r.Examples, p)
	}
	if isSegment(name) && r.Value == "" {
		r.Value = value // the value a decided segment rule sets: one the server issued
	}
	return l.decide(c)
}

// decide decides c's rule if the evidence is enough and nothing contradicts it;
// it returns the rule when it is decided now. This is the rule's one decision:
// MinPairs pairs on MinPaths skeletons for a parameter; for a path segment also
// SegMinPaths skeletons and SegMinValues values seen at its position (segments.go).
func (l *ParamLearner) decide(c *paramCand) *ParamRule {
	r := &c.rule
	if r.Decided || r.Counter != nil || r.Pairs < l.o.MinPairs || r.Paths < l.o.MinPaths {
		return nil
	}
	if isSegment(r.Param) {
		sp := l.segs[r.Key()]
		if r.Paths < l.o.SegMinPaths || sp == nil || len(sp.values) < l.o.SegMinValues {
			return nil
		}
	}
	r.Decided = true
	l.active[r.Host] = append(l.active[r.Host], r.Param)
	return r.snapshot()
}

// snapshot returns a copy of r that shares nothing with the learner's state.
func (r *ParamRule) snapshot() *ParamRule {
	out := *r
	out.Examples = slices.Clone(r.Examples)
	return &out
}

// counter blocks (host, name) for good; it returns the rule when that is news.
func (l *ParamLearner) counter(host, name string, p ParamPair) *ParamRule {
	c := l.cand(host, name)
	if c == nil {
		return nil
	}
	r := &c.rule
	if r.Counter != nil {
		return nil
	}
	r.Counter = &p
	if r.Decided {
		r.Withdrawn = true
		l.active[host] = slices.DeleteFunc(l.active[host], func(n string) bool { return n == name })
	}
	return r.snapshot()
}

// Restore loads rules a store kept (decided, withdrawn or blocked ones).
func (l *ParamLearner) Restore(rules []ParamRule) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rules {
		c := l.candBounded(r.Host, r.Param, false)
		wasActive := c.rule.Active()
		c.rule = r
		c.rule.Examples = slices.Clone(r.Examples)
		switch {
		case r.Active() && !wasActive:
			l.active[r.Host] = append(l.active[r.Host], r.Param)
		case !r.Active() && wasActive:
			l.active[r.Host] = slices.DeleteFunc(l.active[r.Host], func(n string) bool { return n == r.Param })
		}
	}
}

// Merge loads rules other learners stored (the workers of a shared crawl): a
// rule replaces this learner's own only when it says more (decided over
// undecided; withdrawn or blocked over decided), so a rule this learner
// changed and has not stored yet is not taken back. It returns how many
// rules it replaced.
func (l *ParamLearner) Merge(rules []ParamRule) int {
	var newer []ParamRule
	l.mu.RLock()
	for _, r := range rules {
		c := l.cands[r.Key()]
		if c == nil || paramRank(r) > paramRank(c.rule) {
			newer = append(newer, r)
		}
	}
	l.mu.RUnlock()
	if len(newer) > 0 {
		l.Restore(newer)
	}
	return len(newer)
}

// paramRank orders what a rule says: 0 evidence only, 1 decided, 2 final
// (withdrawn, or blocked by counter-evidence).
func paramRank(r ParamRule) int {
	switch {
	case r.Withdrawn || r.Counter != nil:
		return 2
	case r.Decided:
		return 1
	}
	return 0
}

// Rules returns every rule with evidence or counter-evidence, sorted by host and parameter.
func (l *ParamLearner) Rules() []ParamRule {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ParamRule, 0, len(l.cands))
	for _, c := range l.cands {
		r := c.rule
		r.Examples = slices.Clone(r.Examples)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ParamRule) int { return strings.Compare(a.Key(), b.Key()) })
	return out
}

// Canonical returns the canonical URL u without the parameters found irrelevant on its
// host. It is idempotent, and returns u itself when the host has no rule.
func (l *ParamLearner) Canonical(u string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.active) == 0 {
		return u
	}
	names := l.active[HostKey(u)]
	if len(names) == 0 {
		return u
	}
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	start := i + 3
	if j := strings.IndexAny(u[start:], "/?"); j >= 0 {
		start += j
	} else {
		return u
	}
	prefix, rest := u[:start], u[start:]
	path, query, hasQuery := strings.Cut(rest, "?")
	path = stripPathParams(path, func(n string) bool { return slices.Contains(names, ";"+n) })
	path = l.setSegments(HostKey(u), names, path)
	if path == "" {
		path = "/"
	}
	if hasQuery {
		query = stripQuery(query, func(piece string) bool {
			n, _, _ := strings.Cut(piece, "=")
			return slices.Contains(names, n)
		})
	}
	out := prefix + path
	if query != "" {
		out += "?" + query
	}
	if hasDotSegment(path) {
		// A dropped path parameter left a dot segment: resolve it as the
		// server will, so the seen-set, the scope and robots.txt see the
		// path that is fetched.
		if c, err := Canonicalize(out, nil); err == nil {
			return c
		}
	}
	return out
}
