package mirror

import "math"

// The loss monitor. The sequential test decides whether a candidate is a
// mirror (a share of matching paths of at least MirrorShare); it says nothing
// about what skipping its pages loses. A mirror at share 0.9 whose other
// pages were updated loses one skipped page in ten. After a decision, the
// verification stream (one in VerifyEvery URLs the decision would skip,
// fetched instead) is an unbiased sample of the skipped pages, and the
// monitor watches it for loss events: a verified pair whose pages are below
// Represented, a page that would have been lost had it been skipped.
//
// It is Page's CUSUM, the sequential test for a change in a stream, between
// the loss rate the crawl accepts and the one at which a mirror loses every
// page it does not match:
//
//	q0 = LossRate (0.001)        q1 = 1 - MirrorShare (0.2)
//	loss event:  + ln(q1 / q0)            = ln 200    = +5.30
//	otherwise:   + ln((1 - q1) / (1 - q0)) = ln 0.801 = -0.222
//	statistic held at 0 or above; stop at ln((1 - beta) / alpha) = 4.595
//
// with the sequential test's error rates. A loss event adds more than the
// bound whenever q1 / q0 >= (1 - beta) / alpha = 99, that is for any loss
// target below 0.2 / 99 = 0.002: at the 0.1% target, the first verified loss
// event stops the skipping. docs/MIRRORS.md gives the expected loss and
// request cost this leaves per share of differing pages.
type monitor struct {
	event, quiet, stop float64
	power              int // PowerVerifications
}

func newMonitor(o Options) monitor {
	q0, q1 := o.LossRate, 1-o.MirrorShare
	return monitor{
		event: math.Log(q1 / q0),
		quiet: math.Log((1 - q1) / (1 - q0)),
		stop:  math.Log((1 - o.MissedMirror) / o.FalseMirror),
		power: PowerVerifications(o),
	}
}

// PowerVerifications is how many verifications the loss monitor needs to
// notice, with probability 1 - MissedMirror, a mirror that loses pages at
// its alternative rate q1 = 1 - MirrorShare: the first loss event stops the
// skipping, and n verifications all miss the loss with probability
// (1 - q1)^n, at most MissedMirror from n = ln(MissedMirror) / ln(1 - q1)
// on (21 at the defaults: ln 0.01 / ln 0.8 = 20.6). A stream at one in
// VerifyEvery (20) has that many only after 420 skips: on a smaller mirror
// the monitor, without a start like MonitorPrior's, has less power than
// the test's stated error rate.
func PowerVerifications(o Options) int {
	return int(math.Ceil(math.Log(o.MissedMirror) / math.Log(o.MirrorShare)))
}

// Monitor records one verification-stream comparison of a decided mirror:
// lost says the two pages are below Represented (the copy would have been
// lost had it been skipped). It returns HaltedNow when the loss monitor
// stops the mirror's skipping: the caller queues again the URLs skipped
// under it; the decision stands and is reported, but nothing more is
// skipped under it.
func (d *Detector) Monitor(key string, lost bool) Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || !c.Decided || c.Halted {
		return NoChange
	}
	step := d.m.quiet
	if lost {
		c.LossEvents++
		step = d.m.event
	}
	c.LossStat = max(c.LossStat+step, 0)
	if c.LossStat >= d.m.stop {
		c.Halted = true
		return HaltedNow
	}
	return NoChange
}

// Halted reports whether the loss monitor stopped candidate key's skipping.
func (d *Detector) Halted(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	return c != nil && c.Halted
}

// priorMax bounds the loss events kept per undecided candidate.
const priorMax = 64

// Prior records one comparison of candidate key made while it is undecided
// (the sequential test's own samples, and the pages the crawl compares
// anyway): lost says its two pages are below Represented, words is the
// length of the page on the original's side. MonitorPrior uses them when
// the candidate is decided.
func (d *Detector) Prior(key string, lost bool, words int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || c.Decided || c.Halted {
		return
	}
	if lost && len(c.PriorLost) < priorMax {
		c.PriorLost = append(c.PriorLost, words)
	}
}

// MonitorPrior sets the start of decided candidate key's verification
// stream from the comparisons made before the decision (Prior), and
// forgets them. It returns the number of URLs the decision would skip that
// are verified one after the other before the stream goes on at one in
// VerifyEvery: PowerVerifications when some pair compared before the
// decision was a loss event the decision would not have prevented (below
// Represented, its original long enough to represent its copy as the
// candidate's pairs typically differ: Represents), else 0.
//
// Such a pair is evidence that skipping may lose pages, but no sample of
// what the decision skips: a crawl fetches index pages, tables of contents
// and directory listings first, and they differ where the two sites'
// structure does (a listing's sizes and dates differ on every mirror).
// Counted as a loss event it stopped the skipping of 23 of 36 variant-web
// crawls of families whose pages the decision represents (dates, build,
// nav, markup, banner, superset; none before), on their directory
// listings. So it does not stop the skipping; it makes the monitor reach
// its stated power first (docs/MIRRORS.md).
func (d *Detector) MonitorPrior(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.cands[key]
	if c == nil || !c.Decided || c.Halted {
		return 0
	}
	lost := c.PriorLost
	c.PriorLost = nil
	for _, words := range lost {
		if d.representsLocked(key, words) {
			c.VerifyNext = d.m.power
			return c.VerifyNext
		}
	}
	return 0
}
