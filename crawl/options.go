package crawl

import (
	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
)

// The mappings from the configuration file to the options of each stage, in
// one place for the command line and the tests.

// TrapOptions maps the urls section of the config to the frontier's trap limits.
func TrapOptions(u configs.URLs) frontier.TrapOptions {
	return frontier.TrapOptions{
		MaxURLLength:       u.MaxLength,
		MaxPathDepth:       u.MaxPathDepth,
		MaxRepeatedSegment: u.MaxRepeatedSegment,
		MaxQueryParams:     u.MaxQueryParams,
	}
}

// DedupOptions maps the dedup section of the config to dedup.Options.
func DedupOptions(d configs.Dedup) dedup.Options {
	o := dedup.DefaultOptions()
	o.ShingleWords = d.ShingleWords
	o.Samples = d.Samples
	o.Filter = dedup.FilterOptions{Preset: d.Filter, K: d.FilterK, S: d.FilterS, R: d.FilterR, Bits: d.FilterBits}
	o.Simhash = d.Simhash
	o.SimhashK = d.SimhashK
	o.SimhashIndex = d.SimhashIndex
	o.SimhashWeight = d.SimhashWeight
	o.PSMBudget = d.PSMBudget
	o.BPHSBlocks = d.BPHSBlocks
	o.BPHSHeader = d.BPHSHeader
	o.Threshold = d.Threshold
	o.Bands = d.Bands
	o.BandRows = d.BandRows
	return o
}

// MirrorOptions maps the mirror section to the mirror detector's options.
func MirrorOptions(m configs.Mirror) mirror.Options {
	o := mirror.DefaultOptions()
	o.MirrorShare, o.OtherShare = m.MirrorShare, m.OtherShare
	o.FalseMirror, o.MissedMirror = m.FalseMirror, m.MissedMirror
	o.MaxCompared, o.Sample, o.VerifyEvery = m.MaxCompared, m.Sample, m.VerifyEvery
	return o
}

// LinkOptions maps the mirror section to the copy policy and the
// near-duplicate link monitor's options.
func LinkOptions(m configs.Mirror) mirror.LinkOptions {
	return mirror.LinkOptions{Policy: mirror.Policy(m.Policy), LinkSample: m.LinkSample,
		VerifyShare: m.VerifyShare, Seed: m.SampleSeed}
}

// LinkMonitor builds the near-duplicate link monitor the config asks for
// (with or without mirror detection: a near-duplicate's links are
// suppressed either way).
func LinkMonitor(cfg configs.Config) *mirror.LinkMonitor {
	return mirror.NewLinkMonitor(LinkOptions(cfg.Mirror))
}

// MirrorDetector builds the mirror detector the config asks for (nil when
// mirror handling is off).
func MirrorDetector(cfg configs.Config) *mirror.Detector {
	if !cfg.Mirror.Enabled {
		return nil
	}
	return mirror.NewDetector(MirrorOptions(cfg.Mirror))
}
