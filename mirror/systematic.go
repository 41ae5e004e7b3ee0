package mirror

import "slices"

// Differences a pair of sites shows on every page (a mirror's banner, a build
// footer, a renamed navigation link, the version in a header) are a property
// of the pair, not of its pages. The duplicate decision judges pages one at a
// time, so such a difference puts every short page of a mirror below the
// near-duplicate threshold. Resemblance discounts it: a shingle that was in
// the difference of at least SystematicPairs earlier compared pairs of the
// same candidate is systematic, and left out of the union. Content changes
// are page-specific: the shingles of an updated paragraph, or of another
// version's edits, are in the difference of one pair only, and still count.
const (
	// SystematicPairs is how many pairs of one candidate a shingle must
	// differ in to be systematic. Two independent pages sharing an edit of
	// five words in a row is already unlikely; three make it the pair's.
	SystematicPairs = 3
	// systematicTrack bounds the work and memory: the differences of a
	// candidate's first pairs are counted, at most systematicMax shingles a
	// candidate, for at most systematicCands candidates (about 40 MB at
	// worst); past that, Resemblance is the plain Jaccard similarity.
	systematicTrack = 64
	systematicMax   = 4096
	systematicCands = 512
)

// diffCounts counts, for one candidate, the pairs whose difference held each
// shingle.
type diffCounts struct {
	pairs      int
	counts     map[uint64]uint16
	systematic int   // shingles whose count reached SystematicPairs
	restored   int   // systematic as stored before a resume (counts start again)
	sizes      []int // the tracked pairs' differences, in shingles
}

// restoreDiffs takes back what Represents needs of a stored candidate: the
// differences of its compared pairs and its systematic shingles (the
// shingle counts themselves are not stored; they build up again).
func (d *Detector) restoreDiffs(c Candidate) {
	if len(c.DiffSizes) == 0 && c.Systematic == 0 {
		return
	}
	if d.diffs == nil {
		d.diffs = map[string]*diffCounts{}
	}
	if d.diffs[c.Key] != nil || len(d.diffs) >= systematicCands {
		return
	}
	sizes := c.DiffSizes[:min(len(c.DiffSizes), systematicTrack)]
	d.diffs[c.Key] = &diffCounts{counts: map[uint64]uint16{}, restored: c.Systematic, sizes: slices.Clone(sizes)}
}

// Resemblance returns the Jaccard similarity of two pages' shingle sets a and
// b (sorted in place; repeats count once) compared under candidate key, with
// the candidate's systematic differences left out, and records their
// difference for the pairs to come. Without earlier pairs it is the plain
// Jaccard similarity.
func (d *Detector) Resemblance(key string, a, b []uint64) float64 {
	r, _ := d.Similarities(key, a, b)
	return r
}

// Similarities returns Resemblance and the plain Jaccard similarity of a and
// b (what decides whether one page represents the other: Represented), and
// records their difference for the pairs to come.
func (d *Detector) Similarities(key string, a, b []uint64) (resemblance, jaccard float64) {
	resemblance, jaccard, diff := d.Measure(key, a, b)
	d.RecordDifference(key, len(diff), diff)
	return resemblance, jaccard
}

// Measure is Similarities without recording: it also returns the pair's
// difference (the shingles in one set only, sorted), which
// RecordDifference adds to the candidate's counts. A shared crawl measures
// where the pages are and records the difference in every worker's
// detector, in the order of the crawl's mirror log.
func (d *Detector) Measure(key string, a, b []uint64) (resemblance, jaccard float64, diff []uint64) {
	return d.MeasureSets(key, NewShingleSet(a), NewShingleSet(b))
}

// ShingleSet is a page's shingle hashes sorted ascending, without repeats:
// made once (NewShingleSet) and compared with any number of others
// (MeasureSets) without sorting again (issue 29).
type ShingleSet []uint64

// NewShingleSet sorts h in place, drops its repeats and returns it as a set.
func NewShingleSet(h []uint64) ShingleSet {
	slices.Sort(h)
	return ShingleSet(slices.Compact(h))
}

// MeasureSets is Measure over sets made by NewShingleSet.
func (d *Detector) MeasureSets(key string, a, b ShingleSet) (resemblance, jaccard float64, diff []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var counts map[uint64]uint16
	if dc := d.diffs[key]; dc != nil {
		counts = dc.counts
	}
	inter, union := 0, 0
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var v uint64
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			v = a[i]
			i++
		case i == len(a) || b[j] < a[i]:
			v = b[j]
			j++
		default:
			inter++
			union++
			i++
			j++
			continue
		}
		diff = append(diff, v)
		if counts[v] < SystematicPairs {
			union++
		}
	}
	resemblance, jaccard = 1, 1
	if union > 0 {
		resemblance = float64(inter) / float64(union)
	}
	if inter+len(diff) > 0 {
		jaccard = float64(inter) / float64(inter+len(diff))
	}
	return resemblance, jaccard, diff
}

// RecordDifference counts a compared pair's difference (Measure) for
// candidate key: its size for Represents, its shingles towards the
// systematic ones, for the candidate's first pairs (Tracking: past them
// the shingles may be left out).
func (d *Detector) RecordDifference(key string, size int, diff []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dc := d.diffs[key]
	if dc == nil {
		if d.diffs == nil {
			d.diffs = map[string]*diffCounts{}
		}
		if len(d.diffs) >= systematicCands {
			return // not kept: nothing is recorded
		}
		dc = &diffCounts{counts: map[uint64]uint16{}}
		d.diffs[key] = dc
	}
	if len(dc.sizes) < systematicTrack {
		dc.sizes = append(dc.sizes, size)
	}
	if dc.pairs < systematicTrack {
		dc.pairs++
		for _, v := range diff {
			if n, ok := dc.counts[v]; ok || len(dc.counts) < systematicMax {
				dc.counts[v] = min(n+1, SystematicPairs)
				if n+1 == SystematicPairs {
					dc.systematic++
				}
			}
		}
	}
}

// Tracking reports whether candidate key still counts its pairs'
// differences (RecordDifference records only its first pairs' shingles).
func (d *Detector) Tracking(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	dc := d.diffs[key]
	if dc == nil {
		return len(d.diffs) < systematicCands
	}
	return dc.pairs < systematicTrack
}

// Represents reports whether a page of the given number of words still
// represents its copy under candidate key (plain Jaccard at least
// Represented) when the two differ as the candidate's pairs typically do. A
// copy that drops r of the page's w shingles and adds a, with r + a <= s,
// is at (w - r) / (w + a) >= (w - s) / w: at least Represented when w >= 5s
// at 0.80, whichever side a banner or footer is on. s is the larger of the
// candidate's systematic shingles and the median difference of its compared
// pairs (a footer whose time differs on every page is not systematic, but
// its size is typical of the pair). Resemblance discounts
// the banner, so such a page matches; skipping its copy would lose the copy's
// text all the same. The caller fetches such copies instead of skipping them:
// a signal before the request, from the counterpart's length and what the
// candidate's compared pairs showed.
func (d *Detector) Represents(key string, words int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.representsLocked(key, words)
}

// representsLocked is Represents with d.mu held.
func (d *Detector) representsLocked(key string, words int) bool {
	dc := d.diffs[key]
	if dc == nil || len(dc.sizes) < SystematicPairs {
		return true
	}
	sizes := slices.Clone(dc.sizes)
	slices.Sort(sizes)
	s := max(dc.systematic, dc.restored, sizes[len(sizes)/2])
	return float64(words-s) >= Represented*float64(words)
}

// Identical records a compared pair of candidate key whose pages are the
// same (payload or text), compared without Resemblance: a difference of 0
// for Represents' median.
func (d *Detector) Identical(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dc := d.diffs[key]
	if dc == nil {
		if d.diffs == nil {
			d.diffs = map[string]*diffCounts{}
		}
		if len(d.diffs) >= systematicCands {
			return
		}
		dc = &diffCounts{counts: map[uint64]uint16{}}
		d.diffs[key] = dc
	}
	if len(dc.sizes) < systematicTrack {
		dc.sizes = append(dc.sizes, 0)
	}
}
