package dedup

import (
	"errors"
	"fmt"
)

// Filter presets (Manasse, chapter 6.1; Broder, "Identifying and filtering near-duplicate documents").
const (
	PresetAltaVista = "altavista" // 6 supershingles of 14 samples, 64-bit, match if >= 2 of 6 agree
	PresetBing      = "bing"      // 6 supershingles of 5 samples, 16-bit, match if >= 4 of 6 agree
	PresetCustom    = "custom"    // K, S, R and Bits as given
)

// Simhash index implementations.
const (
	IndexPSM  = "psm"  // probabilistic simhash matching (Sood & Loguinov), one copy of the fingerprints
	IndexBPHS = "bphs" // block-permuted Hamming search (Manku et al.), one table per block choice
)

// Simhash feature weightings.
const (
	WeightUniform = "uniform" // every distinct shingle weighs 1 (set semantics, as the sketches)
	WeightTF      = "tf"      // every occurrence of a shingle weighs 1 (bag semantics)
)

// Defaults.
const (
	DefaultShingleWords = 5
	DefaultSamples      = 84
	DefaultSimhashK     = 3
	// DefaultPSMBudget is the number of header lookups per PSM query, the exact
	// probe included. 16 gave 0.98 recall against exhaustive search on planted
	// near-duplicates at 1 M fingerprints, 8 gave 0.95 (BENCHMARKS-dedup.md).
	DefaultPSMBudget = 16
	// DefaultPSMSigma is the standard deviation of the change of a normalized
	// simhash weight W_j/sqrt(n) between near-duplicates (J about 0.95).
	DefaultPSMSigma = 0.2
	// DefaultThreshold is the exact Jaccard similarity from which a settled
	// candidate is a near duplicate: the design point of the seeds' filter.
	// Broder (seed 002, section 4) picks a filter's threshold rho0 where
	// P(k,s,r)(rho0) = 1/2, which minimizes the total error, and finds 0.909
	// for P(6,14,2); seed 004 calls pages with "a high Jaccard similarity
	// (e.g. greater than 0.9)" near duplicates. At 0.90 the end-to-end curve
	// is at least the filter's for every J >= 0.90 and 0 below (docs/DEDUP.md).
	DefaultThreshold     = 0.90
	DefaultBPHSBlocks    = 4
	DefaultBPHSHeader    = 1
	DefaultMaxCandidates = 32
	// DefaultBands and DefaultBandRows are the candidate stage's banding:
	// P(12,7,1) is at least 0.99 from J = 0.85 (0.9996 at 0.90) and its
	// bands are the halves of the AltaVista supershingles, so every filter
	// candidate is a band candidate (docs/DEDUP.md).
	DefaultBands    = 12
	DefaultBandRows = 7
	// MinThreshold is the lowest verification threshold allowed: the seeds call
	// pages near-duplicates at 0.95 and never below about 0.75.
	MinThreshold = 0.75
)

// FilterOptions selects the supershingle filter P(k,s,r).
type FilterOptions struct {
	Preset  string // PresetAltaVista (default), PresetBing or PresetCustom
	K, S, R int    // supershingles, samples per supershingle, agreements required (custom)
	Bits    int    // 16, 32 or 64 bits kept per supershingle (custom)
}

// Resolved returns the filter with the preset's K, S, R and Bits filled in.
func (f FilterOptions) Resolved() FilterOptions {
	switch f.Preset {
	case PresetAltaVista, "":
		return FilterOptions{Preset: PresetAltaVista, K: 6, S: 14, R: 2, Bits: 64}
	case PresetBing:
		return FilterOptions{Preset: PresetBing, K: 6, S: 5, R: 4, Bits: 16}
	}
	return f
}

// Options configures a Detector. Start from DefaultOptions.
type Options struct {
	ShingleWords  int           // w, words per looped shingle (default 5)
	Samples       int           // min-hash samples per sketch (default 84)
	Filter        FilterOptions // supershingle filter (default AltaVista)
	Simhash       bool          // also look for candidates by simhash (default true)
	SimhashK      int           // Hamming distance (default 3)
	SimhashIndex  string        // IndexPSM (default) or IndexBPHS
	SimhashWeight string        // WeightUniform (default) or WeightTF
	PSMBudget     int           // header lookups per PSM query (default 16)
	PSMSigma      float64       // spread of weight changes, orders PSM's bit flips (default 0.2)
	BPHSBlocks    int           // G, blocks of the fingerprint (default 4)
	BPHSHeader    int           // g, blocks in a table's sort key (default 1; tables = C(G,g))
	Threshold     float64       // near-duplicate if exact (settled) or estimated Jaccard >= Threshold (default 0.90)
	MaxCandidates int           // candidates verified per page at most (default 32)
	// Bands and BandRows shape the candidate stage after the filter: LSH
	// banding over the sketch, a page is a candidate when all BandRows
	// samples of one of Bands consecutive bands agree (the filter
	// P(Bands, BandRows, 1)). Default 12 bands of 7: P(0.90) = 0.9996,
	// where the filter alone gives 0.42 (docs/DEDUP.md). Bands < 0 turns
	// the stage off (the seeds' filter alone).
	Bands    int
	BandRows int
}

// DefaultOptions returns the seeds' settings.
func DefaultOptions() Options {
	return Options{
		ShingleWords:  DefaultShingleWords,
		Samples:       DefaultSamples,
		Filter:        FilterOptions{Preset: PresetAltaVista},
		Simhash:       true,
		SimhashK:      DefaultSimhashK,
		SimhashIndex:  IndexPSM,
		SimhashWeight: WeightUniform,
		PSMBudget:     DefaultPSMBudget,
		PSMSigma:      DefaultPSMSigma,
		BPHSBlocks:    DefaultBPHSBlocks,
		BPHSHeader:    DefaultBPHSHeader,
		Threshold:     DefaultThreshold,
		MaxCandidates: DefaultMaxCandidates,
		Bands:         DefaultBands,
		BandRows:      DefaultBandRows,
	}
}

// WithDefaults fills zero-valued fields with their defaults (Simhash, a bool, is left as is).
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.ShingleWords == 0 {
		o.ShingleWords = d.ShingleWords
	}
	if o.Samples == 0 {
		o.Samples = d.Samples
	}
	if o.Filter.Preset == "" {
		o.Filter.Preset = d.Filter.Preset
	}
	if o.SimhashK == 0 {
		o.SimhashK = d.SimhashK
	}
	if o.SimhashIndex == "" {
		o.SimhashIndex = d.SimhashIndex
	}
	if o.SimhashWeight == "" {
		o.SimhashWeight = d.SimhashWeight
	}
	if o.PSMBudget == 0 {
		o.PSMBudget = d.PSMBudget
	}
	if o.PSMSigma == 0 {
		o.PSMSigma = d.PSMSigma
	}
	if o.BPHSBlocks == 0 {
		o.BPHSBlocks = d.BPHSBlocks
	}
	if o.BPHSHeader == 0 {
		o.BPHSHeader = d.BPHSHeader
	}
	if o.Threshold == 0 {
		o.Threshold = d.Threshold
	}
	if o.MaxCandidates == 0 {
		o.MaxCandidates = d.MaxCandidates
	}
	if o.Bands == 0 {
		o.Bands = d.Bands
	}
	if o.BandRows == 0 {
		o.BandRows = d.BandRows
	}
	return o
}

// maxCombinations bounds C(K,R), the number of index keys per page.
const maxCombinations = 256

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.ShingleWords < 1 || o.ShingleWords > 64 {
		bad("dedup: shingle words %d out of range [1, 64]", o.ShingleWords)
	}
	if o.Samples < 1 || o.Samples > 1024 {
		bad("dedup: samples %d out of range [1, 1024]", o.Samples)
	}
	switch o.Filter.Preset {
	case PresetAltaVista, PresetBing, PresetCustom:
	default:
		bad("dedup: unknown filter preset %q (want %q, %q or %q)", o.Filter.Preset, PresetAltaVista, PresetBing, PresetCustom)
	}
	f := o.Filter.Resolved()
	sketchShort := false // the filter's samples exceed the sketch: reported once
	if f.K < 1 || f.S < 1 || f.R < 1 || f.R > f.K {
		bad("dedup: filter k=%d s=%d r=%d: want k, s >= 1 and 1 <= r <= k", f.K, f.S, f.R)
	} else {
		if f.K*f.S > o.Samples {
			sketchShort = true
			bad("dedup: filter needs k*s = %d samples, sketch has %d", f.K*f.S, o.Samples)
		}
		if c := binomial(f.K, f.R) + float64(max(o.Bands, 0)); c > maxCombinations {
			bad("dedup: filter has C(%d,%d) + %d bands = %.0f index keys per page, more than %d", f.K, f.R, max(o.Bands, 0), c, maxCombinations)
		}
	}
	if f.Bits != 16 && f.Bits != 32 && f.Bits != 64 {
		bad("dedup: filter bits %d: want 16, 32 or 64", f.Bits)
	}
	if o.SimhashK < 0 || o.SimhashK > 8 {
		bad("dedup: simhash k %d out of range [0, 8]", o.SimhashK)
	}
	switch o.SimhashIndex {
	case IndexPSM, IndexBPHS:
	default:
		bad("dedup: unknown simhash index %q (want %q or %q)", o.SimhashIndex, IndexPSM, IndexBPHS)
	}
	switch o.SimhashWeight {
	case WeightUniform, WeightTF:
	default:
		bad("dedup: unknown simhash weighting %q (want %q or %q)", o.SimhashWeight, WeightUniform, WeightTF)
	}
	if o.PSMBudget < 1 || o.PSMBudget > maxPSMBudget {
		bad("dedup: psm budget %d: want 1 to %d", o.PSMBudget, maxPSMBudget)
	}
	if !(o.PSMSigma > 0 && o.PSMSigma < 10) {
		bad("dedup: psm sigma %g out of range (0, 10)", o.PSMSigma)
	}
	if o.SimhashIndex == IndexBPHS {
		if o.BPHSBlocks < 2 || o.BPHSBlocks > 16 {
			bad("dedup: bphs blocks %d out of range [2, 16]", o.BPHSBlocks)
		} else if o.BPHSHeader < 1 || o.BPHSHeader > o.BPHSBlocks-o.SimhashK {
			bad("dedup: bphs header blocks %d: want 1 <= g <= G-k = %d", o.BPHSHeader, o.BPHSBlocks-o.SimhashK)
		}
	}
	if !(o.Threshold >= MinThreshold && o.Threshold <= 1) {
		bad("dedup: threshold %g out of range [%g, 1]", o.Threshold, MinThreshold)
	}
	if o.Bands > 0 && (o.BandRows < 1 || o.Bands*o.BandRows > o.Samples && !sketchShort) {
		bad("dedup: %d bands of %d rows: want rows >= 1 and bands*rows <= samples (%d)", o.Bands, o.BandRows, o.Samples)
	}
	if o.MaxCandidates < 1 {
		bad("dedup: max candidates %d: want >= 1", o.MaxCandidates)
	}
	return errors.Join(errs...)
}
