package variantweb

import (
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// detector computes looped shingles at dedup's default width, as the crawler does.
var detector = sync.OnceValue(func() *dedup.Detector {
	d, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		panic(err) // the defaults are valid
	}
	return d
})

// Shingles returns the sorted, distinct fingerprints of the looped shingles of a page's
// visible text, tokenized by parse.Parse and shingled by dedup.Detector.Shingles with
// dedup's defaults: the sets whose Jaccard similarity the duplicate decision estimates.
func Shingles(body []byte, pageURL string) ([]uint64, error) {
	sh, _, err := shingleText(body, pageURL)
	return sh, err
}

func shingleText(body []byte, pageURL string) ([]uint64, string, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, "", fmt.Errorf("variantweb: page URL: %w", err)
	}
	doc, err := parse.Parse(body, u, parse.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("variantweb: parse %s: %w", pageURL, err)
	}
	sh := detector().Shingles(doc.Tokens, nil)
	slices.Sort(sh)
	return slices.Compact(sh), doc.Text, nil
}

// Jaccard is |a ∩ b| / |a ∪ b| of two sorted, distinct sets; 1 when both are empty.
func Jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, common := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}
