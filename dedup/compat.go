package dedup

import (
	"fmt"
	"strings"
)

// Difference is one signature setting in which two Options differ.
type Difference struct {
	Option   string // the option's name: shingle_words, samples, filter_k, filter_s, filter_bits, simhash_weight
	Was, Now any    // the stored value and the new one
}

// IncompatibleError lists the signature settings in which new options differ
// from the ones a store's signatures were made with.
type IncompatibleError struct{ Differences []Difference }

func (e *IncompatibleError) Error() string {
	parts := make([]string, len(e.Differences))
	for i, d := range e.Differences {
		parts[i] = fmt.Sprintf("%s %v (now %v)", d.Option, d.Was, d.Now)
	}
	return "dedup: signatures were made with " + strings.Join(parts, ", ")
}

// CheckCompatibility reports whether signatures made with stored can be
// searched with o (as pebble's Options.CheckCompatibility does for a store's
// options): nil, or an *IncompatibleError naming each setting that changes
// how a page is signed. The shingle width, the samples, the supershingle
// shape (k, s and the bits kept) and the simhash weighting do: an index
// rebuilt from signatures made two ways would miss pairs in it (other
// supershingles, other simhashes), or could not compare them at all (other
// sketches). Settings used only when searching (threshold, filter_r,
// simhash_k, the simhash index and its parameters) may change.
func (o Options) CheckCompatibility(stored Options) error {
	o, stored = o.WithDefaults(), stored.WithDefaults()
	pf, nf := stored.Filter.Resolved(), o.Filter.Resolved()
	var diffs []Difference
	for _, d := range []Difference{
		{"shingle_words", stored.ShingleWords, o.ShingleWords},
		{"samples", stored.Samples, o.Samples},
		{"filter_k", pf.K, nf.K},
		{"filter_s", pf.S, nf.S},
		{"filter_bits", pf.Bits, nf.Bits},
		{"simhash_weight", stored.SimhashWeight, o.SimhashWeight},
	} {
		if d.Was != d.Now {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return &IncompatibleError{Differences: diffs}
}
