package dedup

import "fmt"

// Change detection for a recrawl: a revisited page is compared with its
// previous version by the same decision that calls two pages duplicates
// (settle.go), so "trivially changed" means exactly what "near duplicate"
// means between two pages: a new date, footer or counter leaves the two
// versions' looped shingle sets at Jaccard >= Threshold, a real edit does not.
//
// The rule, for the previous signature p and the new one c:
//
//   - p.Exact == c.Exact (the same normalized token stream): ChangeNone.
//   - fewer than SettleFloor() of the Samples min-hash samples agree:
//     ChangeReal, without settling; a pair at J >= Threshold falls
//     below the floor with probability < SettleMissBound.
//   - otherwise settled on the exact Jaccard of the two versions' looped
//     shingle sets, when both token streams are given: ChangeTrivial when
//     J >= Threshold, else ChangeReal. Without the previous tokens (its stored
//     text unreadable) the sketch estimate decides, as the duplicate
//     decision does for an unreadable candidate.
//
// No filter stands between the two versions: the filter only proposes
// candidates, and here the candidate is known.
//
// A consequence to know: the edit a page absorbs shrinks with the page. k
// consecutive changed words change k+w-1 of n looped shingles, so J is about
// (n-k-w+1)/(n+k+w-1), and J >= t needs n >= (k+w-1)(1+t)/(1-t): a date of 3
// words (w = 5) is trivial on pages of 133 words or more at t = 0.90 (273 at
// 0.95). A shorter page with a new date is ChangeReal, as the duplicate
// decision would keep two such pages apart.

// Change is how a page of a recrawl relates to its previous version.
type Change uint8

// Changes.
const (
	ChangeNone    Change = iota + 1 // the same text (or a 304 Not Modified)
	ChangeTrivial                   // a near duplicate of the previous version
	ChangeReal                      // a real change
	ChangeNew                       // not in the previous crawl
	ChangeGone                      // 404 or 410 now
)

// Changes lists every change class in report order.
var Changes = []Change{ChangeNone, ChangeTrivial, ChangeReal, ChangeNew, ChangeGone}

// String returns "unchanged", "trivially_changed", "changed", "new" or "gone".
func (c Change) String() string {
	switch c {
	case ChangeNone:
		return "unchanged"
	case ChangeTrivial:
		return "trivially_changed"
	case ChangeReal:
		return "changed"
	case ChangeNew:
		return "new"
	case ChangeGone:
		return "gone"
	}
	return fmt.Sprintf("change(%d)", uint8(c))
}

// ParseChange is the inverse of String.
func ParseChange(s string) (Change, bool) {
	for _, c := range Changes {
		if c.String() == s {
			return c, true
		}
	}
	return 0, false
}

// VersionDecision is the outcome of CompareVersions.
type VersionDecision struct {
	Change     Change  // ChangeNone, ChangeTrivial or ChangeReal
	Similarity float64 // 1 when unchanged; the exact Jaccard when Settled, else the sketch estimate
	Settled    bool    // decided on the exact Jaccard of the two versions
}

// CompareVersions classifies a page's new signature cur against its previous
// signature prev (both made by this Detector's Sign). prevTokens and
// curTokens are the two versions' token streams for settlement; with either
// nil the sketch estimate decides. It reads no index and changes nothing.
func (d *Detector) CompareVersions(prev, cur *Signature, prevTokens, curTokens []string) VersionDecision {
	if prev.Exact == cur.Exact && prev.Words == cur.Words {
		return VersionDecision{Change: ChangeNone, Similarity: 1}
	}
	if !d.usable(prev) || !d.usable(cur) {
		return VersionDecision{Change: ChangeReal}
	}
	eq := equalSamples(cur.Sketch, prev.Sketch)
	est := float64(eq) / float64(d.opt.Samples)
	if eq < d.floor {
		return VersionDecision{Change: ChangeReal, Similarity: est}
	}
	if prevTokens == nil || curTokens == nil {
		if est >= d.opt.Threshold {
			return VersionDecision{Change: ChangeTrivial, Similarity: est}
		}
		return VersionDecision{Change: ChangeReal, Similarity: est}
	}
	j := ExactJaccard(d.Shingles(prevTokens, nil), d.Shingles(curTokens, nil))
	if j >= d.opt.Threshold-1e-12 { // as settle: a ratio of integers at the threshold
		return VersionDecision{Change: ChangeTrivial, Similarity: j, Settled: true}
	}
	return VersionDecision{Change: ChangeReal, Similarity: j, Settled: true}
}
