package dedup

import (
	"errors"
	"testing"
)

// Every signature setting is refused alone, naming both values; search-side
// settings pass; several changes are all named.
func TestCheckCompatibility(t *testing.T) {
	base := DefaultOptions()
	custom := func(k, s, r, bits int) FilterOptions {
		return FilterOptions{Preset: PresetCustom, K: k, S: s, R: r, Bits: bits}
	}
	cases := []struct {
		name   string
		change func(*Options)
		want   []Difference // nil: compatible
	}{
		{"same", func(*Options) {}, nil},
		{"shingle words", func(o *Options) { o.ShingleWords = 4 }, []Difference{{"shingle_words", 5, 4}}},
		{"samples", func(o *Options) { o.Samples = 96 }, []Difference{{"samples", 84, 96}}},
		{"bing preset", func(o *Options) { o.Filter = FilterOptions{Preset: PresetBing} },
			[]Difference{{"filter_s", 14, 5}, {"filter_bits", 64, 16}}},
		{"custom k", func(o *Options) { o.Filter = custom(5, 14, 2, 64) }, []Difference{{"filter_k", 6, 5}}},
		{"custom bits", func(o *Options) { o.Filter = custom(6, 14, 2, 32) }, []Difference{{"filter_bits", 64, 32}}},
		{"weighting", func(o *Options) { o.SimhashWeight = WeightTF }, []Difference{{"simhash_weight", "uniform", "tf"}}},
		{"the preset's numbers written out", func(o *Options) { o.Filter = custom(6, 14, 2, 64) }, nil},
		{"search side only", func(o *Options) {
			o.Threshold, o.SimhashK, o.SimhashIndex, o.BPHSBlocks, o.BPHSHeader, o.PSMBudget = 0.9, 2, IndexBPHS, 6, 2, 8
			o.Filter = custom(6, 14, 3, 64)
			o.Simhash = false
		}, nil},
		{"zero fields are the defaults", func(o *Options) { *o = Options{Simhash: true} }, nil},
		{"two at once", func(o *Options) { o.ShingleWords, o.Samples = 4, 96 },
			[]Difference{{"shingle_words", 5, 4}, {"samples", 84, 96}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base
			c.change(&o)
			err := o.CheckCompatibility(base)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *IncompatibleError", err)
			}
			if len(ie.Differences) != len(c.want) {
				t.Fatalf("differences %v, want %v", ie.Differences, c.want)
			}
			for i, d := range c.want {
				if ie.Differences[i] != d {
					t.Errorf("difference %d = %v, want %v", i, ie.Differences[i], d)
				}
			}
		})
	}
}
