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
	return o
}

// MirrorDetector builds the mirror detector the config asks for (nil when
// mirror handling is off).
func MirrorDetector(cfg configs.Config) *mirror.Detector {
	if !cfg.Mirror.Enabled {
		return nil
	}
	return mirror.NewDetector(mirror.Options{
		MirrorShare:  cfg.Mirror.MirrorShare,
		OtherShare:   cfg.Mirror.OtherShare,
		FalseMirror:  cfg.Mirror.FalseMirror,
		MissedMirror: cfg.Mirror.MissedMirror,
		MaxCompared:  cfg.Mirror.MaxCompared,
		Sample:       cfg.Mirror.Sample,
		VerifyEvery:  cfg.Mirror.VerifyEvery,
	})
}
