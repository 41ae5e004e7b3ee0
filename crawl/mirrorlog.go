package crawl

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
)

// Mirror evidence crawl-wide (docs/SCALE.md, "Mirror detection in a shared
// crawl"). The mirror detector is a state machine driven by evidence: the
// pairs that propose candidates, the comparisons of paths both sides hold
// (with their differences, for the systematic ones), the pages observed and
// the gap probes' results. In one process each piece is applied as the page
// that holds it commits. In a shared crawl a page's evidence is one entry of
// the crawl's mirror log, appended in the page's commit, and every worker
// applies the log in its order, its own entries included: every worker's
// detector goes through the same states, so a mirror decided on the
// evidence of several workers is decided, at the same point of the log, by
// all of them, and skipped by each.

// MirrorLog is a shared crawl's log of mirror evidence: entries are appended
// through the store's transactions (MirrorAppender) and read back in one
// order by every worker.
type MirrorLog interface {
	// Replay calls fn with every entry the log holds now, in order, and
	// returns the position of the last one ("" when empty): a worker that
	// joins late rebuilds its detector from the whole log. When the log
	// was trimmed (it is capped) it calls fn with nothing and returns
	// ErrMirrorLogTrimmed with the position of its last entry.
	Replay(ctx context.Context, fn func(MirrorEntry) error) (string, error)
	// Follow calls fn with every entry after position pos, in order, as
	// many at a time as have arrived (a batch: fn applies it under one
	// hold of the commit lock), waiting for new ones until ctx ends; it
	// then returns ctx's error.
	Follow(ctx context.Context, pos string, fn func([]MirrorEntry) error) error
}

// MirrorEntry is one entry of the mirror log.
type MirrorEntry struct {
	Pos  string    // its position
	At   time.Time // when it was appended (the log's clock)
	Data []byte
}

// ErrMirrorLogTrimmed: the log no longer holds its first entries.
var ErrMirrorLogTrimmed = errors.New("the mirror log was trimmed")

// MirrorAppender is the transaction method of a store with a mirror log:
// data is appended in the transaction's commit (not at all if it fails).
type MirrorAppender interface {
	AppendMirror(data []byte) error
}

// mirrorEvidence is what one page adds to the detector (one log entry).
type mirrorEvidence struct {
	Worker   string             `json:"w,omitempty"`
	Propose  *mirrorProposal    `json:"p,omitempty"`
	Compared []mirrorComparison `json:"c,omitempty"`
	Observe  string             `json:"o,omitempty"`
	Lacks    []mirrorLack       `json:"l,omitempty"`
	Gaps     []mirrorGapResult  `json:"g,omitempty"`
}

// mirrorLack: a path one side of candidate Key lacked, answering 404 or 410
// where the other side served a page (mirror.Detector.Lack, the evidence of
// a mirror's direction).
type mirrorLack struct {
	Key  string      `json:"k"`
	Side mirror.Side `json:"s,omitempty"` // the side that lacked it
}

// mirrorProposal: a duplicate pair and its link evidence (ProposeLinks).
type mirrorProposal struct {
	Copy    string `json:"c"`
	Orig    string `json:"o"`
	Links   int    `json:"l,omitempty"`
	Matched int    `json:"m,omitempty"`
}

// mirrorComparison is one comparison of a path both sides of candidate Key
// hold. Identical pairs count a difference of 0; measured ones their
// difference (Size shingles; the shingles themselves while the candidate
// tracks them, mirror.Detector.Tracking).
//
// Proposed marks a comparison made only because the page's own pair
// proposed the candidate, which the committing worker's detector did not
// hold yet (commitTx.proposed): it counts only when that proposal is the one
// that makes the candidate (apply). The pages compared under a candidate
// must be chosen without regard to how they compare: in one process, every
// page whose counterpart was fetched once the candidate exists, the
// proposing pair that makes it included. A worker's detector learns of a
// candidate through the log, a little after it is proposed; until then the
// worker compares a page under it only when the page proposes it, that is
// when the duplicate index called the two pages duplicates: a match by
// construction. Counted, those comparisons were a sample of matches only,
// and a burst of them (a worker behind on the log while pages of another
// release were recorded as duplicates of the candidate's other side)
// decided two releases of git a mirror in ten matches.
type mirrorComparison struct {
	Key       string   `json:"k"`
	Match     bool     `json:"m,omitempty"`
	Verify    bool     `json:"v,omitempty"`
	Lost      bool     `json:"l,omitempty"`
	Identical bool     `json:"i,omitempty"`
	Measured  bool     `json:"x,omitempty"`
	Proposed  bool     `json:"p,omitempty"`
	Size      int      `json:"n,omitempty"`
	OrigWords int      `json:"w,omitempty"` // words of the page on the original's side (mirror.Detector.Prior)
	Diff      []uint64 `json:"-"`
	DiffBytes []byte   `json:"d,omitempty"` // Diff, 8 bytes each (in the log)
}

// mirrorGapResult: a gap probe's outcome (mirror.Detector.GapResult).
type mirrorGapResult struct {
	Key    string `json:"k"`
	Linker bool   `json:"l,omitempty"`
	Hit    bool   `json:"h,omitempty"`
}

// mirrorChange is a change of decision an entry made.
type mirrorChange struct {
	key string
	ev  mirror.Event
}

// apply drives the detector with ev, in the order one process applies its
// pieces, and returns the changes of decision.
func (m *mirrorRules) apply(ev *mirrorEvidence) []mirrorChange {
	var out []mirrorChange
	// The candidates of the Proposed comparisons the detector holds before
	// this entry: those comparisons do not count (mirrorComparison).
	var held map[string]bool
	for _, c := range ev.Compared {
		if !c.Proposed {
			continue
		}
		if _, ok := m.det.Candidate(c.Key); ok {
			if held == nil {
				held = map[string]bool{}
			}
			held[c.Key] = true
		}
	}
	if p := ev.Propose; p != nil {
		m.det.ProposeLinks(p.Copy, p.Orig, p.Links, p.Matched)
	}
	for _, c := range ev.Compared {
		if c.Proposed && held[c.Key] {
			continue
		}
		switch {
		case c.Identical:
			m.det.Identical(c.Key)
		case c.Measured:
			m.det.RecordDifference(c.Key, c.Size, c.Diff)
		}
		if !c.Verify {
			// Undecided (or a page fetched before the decision): kept
			// for the verification stream's start (mirror.Detector.Prior).
			m.det.Prior(c.Key, c.Lost, c.OrigWords)
		}
		out = append(out, mirrorChange{c.Key, m.det.Compare(c.Key, c.Match, c.Verify)})
		if c.Verify {
			out = append(out, mirrorChange{c.Key, m.det.Monitor(c.Key, c.Lost)})
		}
	}
	if ev.Observe != "" {
		m.det.Observe(ev.Observe)
	}
	for _, l := range ev.Lacks {
		out = append(out, mirrorChange{l.Key, m.det.Lack(l.Key, l.Side)})
	}
	for _, g := range ev.Gaps {
		m.det.GapResult(g.Key, g.Linker, g.Hit)
	}
	return out
}

// evidence applies ev at once in one process (its changes noted for
// committed); in a shared crawl it is added to the page's log entry.
func (m *mirrorRules) evidence(ct *commitTx, ev mirrorEvidence) {
	if m.log == nil {
		for _, ch := range m.apply(&ev) {
			m.note(ct, ch.key, ch.ev)
		}
		return
	}
	if ct.mirrorLog == nil {
		ct.mirrorLog = &mirrorEvidence{Worker: m.worker}
	}
	all := ct.mirrorLog
	if ev.Propose != nil {
		all.Propose = ev.Propose
	}
	all.Compared = append(all.Compared, ev.Compared...)
	if ev.Observe != "" {
		all.Observe = ev.Observe
	}
	all.Lacks = append(all.Lacks, ev.Lacks...)
	all.Gaps = append(all.Gaps, ev.Gaps...)
}

// appendLog appends the page's evidence to the mirror log in its commit.
func (m *mirrorRules) appendLog(ct *commitTx) error {
	ev := ct.mirrorLog
	if ev == nil {
		return nil
	}
	ap, ok := ct.tx.(MirrorAppender)
	if !ok {
		return errors.New("crawl: the store's transactions cannot append to the mirror log")
	}
	for i := range ev.Compared {
		c := &ev.Compared[i]
		c.DiffBytes = make([]byte, 8*len(c.Diff))
		for j, v := range c.Diff {
			binary.BigEndian.PutUint64(c.DiffBytes[8*j:], v)
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return ap.AppendMirror(b)
}

func decodeEvidence(b []byte) (*mirrorEvidence, error) {
	var ev mirrorEvidence
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("mirror log entry: %w", err)
	}
	for i := range ev.Compared {
		c := &ev.Compared[i]
		if len(c.DiffBytes)%8 != 0 {
			return nil, errors.New("mirror log entry: bad difference")
		}
		c.Diff = make([]uint64, len(c.DiffBytes)/8)
		for j := range c.Diff {
			c.Diff[j] = binary.BigEndian.Uint64(c.DiffBytes[8*j:])
		}
	}
	return &ev, nil
}

// newWorkerTag names this process's entries in the mirror log.
func newWorkerTag() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// replay rebuilds the detector from the whole mirror log (a worker starting
// or joining late); from the candidates stored as evidence when the log was
// trimmed. Nothing is acted on: what the entries changed was acted on when
// they were first applied.
func (m *mirrorRules) replay() error {
	n := 0
	pos, err := m.log.Replay(m.e.sctx, func(en MirrorEntry) error {
		ev, err := decodeEvidence(en.Data)
		if err != nil {
			return err
		}
		m.apply(ev)
		n++
		return nil
	})
	m.pos = pos
	if errors.Is(err, ErrMirrorLogTrimmed) {
		m.e.logger.Warn("the mirror log was trimmed: mirror candidates restored from their stored evidence", "from", pos)
		return m.restoreEvidence()
	}
	if err == nil && n > 0 {
		m.e.logger.Info("mirror log replayed", "entries", n, "candidates", len(m.det.Candidates()))
	}
	return err
}

// follow applies the mirror log's new entries while the crawl runs (stop
// ends it and logs how far behind the other workers' entries were applied).
func (m *mirrorRules) follow(ctx context.Context) (stop func()) {
	if m.log == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := m.log.Follow(ctx, m.pos, m.applyEntries)
		if err != nil && ctx.Err() == nil {
			m.e.setFatal(fmt.Errorf("mirror log: %w", err))
		}
	}()
	return func() {
		cancel()
		<-done
		m.lags.log(m.e)
		m.saveAll()
	}
}

// saveAll stores every candidate as this worker's detector ends the crawl
// (its data dir's report lists the mirrors from them).
func (m *mirrorRules) saveAll() {
	e := m.e
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	cands := m.det.Candidates()
	if len(cands) == 0 || e.fatal() != nil {
		return
	}
	err := e.st.Update(e.sctx, func(tx Tx) error {
		for _, c := range cands {
			if err := m.saveCandidate(tx, c.Key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.setFatal(fmt.Errorf("mirror evidence: %w", err))
	}
}

// applyEntries applies entries of the log as they arrive, in order, and acts
// on the decisions each changes: each worker on the records it holds (its
// own pages skipped when leased, its own failures), the worker whose entry
// made the change also on the crawl's shared skip records. A batch takes the
// commit lock once: taken for each entry, behind a queue of commits (each a
// few round trips to Redis), a backlog of a few hundred entries was applied
// seconds late (the lag logged at the end), and meanwhile this worker
// fetched pages a decided mirror skips.
func (m *mirrorRules) applyEntries(ens []MirrorEntry) error {
	evs := make([]*mirrorEvidence, len(ens))
	for i, en := range ens {
		ev, err := decodeEvidence(en.Data)
		if err != nil {
			return err
		}
		evs[i] = ev
	}
	e := m.e
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	for i, ev := range evs {
		mine := ev.Worker == m.worker
		if !mine {
			m.lags.add(time.Since(ens[i].At))
		}
		m.pos = ens[i].Pos
		ct := &commitTx{e: e}
		for _, ch := range m.apply(ev) {
			m.note(ct, ch.key, ch.ev)
		}
		if e.fatal() != nil {
			return nil
		}
		m.act(ct, mine)
		for _, g := range ev.Gaps {
			// The worker that issued the probe holds its backlog and issues
			// the next ones; the others have none.
			if _, err := e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) { return m.issueGaps(tx, g.Key) }); err != nil {
				e.setFatal(err)
			}
		}
	}
	return nil
}

// lagStats keeps how long after their append the other workers' entries
// were applied.
type lagStats struct {
	mu   sync.Mutex
	lags []time.Duration
}

const maxLags = 100000

func (s *lagStats) add(d time.Duration) {
	s.mu.Lock()
	if len(s.lags) < maxLags {
		s.lags = append(s.lags, d)
	}
	s.mu.Unlock()
}

// Summary returns the median, 99th percentile and largest lag, and the count.
func (s *lagStats) summary() (p50, p99, top time.Duration, n int) {
	s.mu.Lock()
	l := slices.Clone(s.lags)
	s.mu.Unlock()
	if len(l) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(l)
	return l[len(l)/2], l[len(l)*99/100], l[len(l)-1], len(l)
}

func (s *lagStats) log(e *Engine) {
	p50, p99, top, n := s.summary()
	e.logger.Info("mirror log followed", "entries_of_other_workers", n,
		"lag_median_ms", ms(p50), "lag_p99_ms", ms(p99), "lag_max_ms", ms(top))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
