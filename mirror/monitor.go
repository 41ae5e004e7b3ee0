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
}

func newMonitor(o Options) monitor {
	q0, q1 := o.LossRate, 1-o.MirrorShare
	return monitor{
		event: math.Log(q1 / q0),
		quiet: math.Log((1 - q1) / (1 - q0)),
		stop:  math.Log((1 - o.MissedMirror) / o.FalseMirror),
	}
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
