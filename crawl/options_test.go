package crawl

import (
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// The default config file and dedup's defaults describe the same detector,
// and every dedup option the config names reaches the detector.
func TestDedupOptionsFromConfig(t *testing.T) {
	got := DedupOptions(configs.Default().Dedup)
	want := dedup.DefaultOptions()
	// The config names the preset's numbers too; they resolve alike.
	got.Filter, want.Filter = got.Filter.Resolved(), want.Filter.Resolved()
	if got != want {
		t.Errorf("default config gives\n  %+v\ndedup defaults are\n  %+v", got, want)
	}

	d := configs.Default().Dedup
	d.ShingleWords, d.Samples = 4, 96
	d.Filter, d.FilterK, d.FilterS, d.FilterR, d.FilterBits = "custom", 4, 20, 2, 16
	d.Simhash, d.SimhashK, d.SimhashIndex, d.SimhashWeight = false, 2, "bphs", "tf"
	d.PSMBudget, d.BPHSBlocks, d.BPHSHeader = 9, 6, 3
	d.Threshold = 0.93
	o := DedupOptions(d)
	want = dedup.DefaultOptions()
	want.ShingleWords, want.Samples = 4, 96
	want.Filter = dedup.FilterOptions{Preset: "custom", K: 4, S: 20, R: 2, Bits: 16}
	want.Simhash, want.SimhashK, want.SimhashIndex, want.SimhashWeight = false, 2, "bphs", "tf"
	want.PSMBudget, want.BPHSBlocks, want.BPHSHeader = 9, 6, 3
	want.Threshold = 0.93
	if o != want {
		t.Errorf("config %+v gives\n  %+v\nwant\n  %+v", d, o, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("mapped options invalid: %v", err)
	}
}
