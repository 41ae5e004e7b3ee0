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

// Jaccard is |a ∩ b| / |a ∪ b| of two shingle sets (1 when both are empty): the
// crawler's own dedup.ExactJaccard (a and b are kept sorted, so its in-place sort
// changes nothing).
func Jaccard(a, b []uint64) float64 { return dedup.ExactJaccard(a, b) }
