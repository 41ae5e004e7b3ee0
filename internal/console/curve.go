package console

import (
	"fmt"
	"io"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// DedupCurve measures and prints 'crawler dedup curve' for the detector d
// configures, on pairs page pairs per Jaccard value.
func DedupCurve(w io.Writer, d configs.Dedup, pairs int) error {
	name, _, err := crawl.FilterCurve(d)
	if err != nil {
		return err
	}
	det, err := dedup.New(crawl.DedupOptions(d))
	if err != nil {
		return crawl.ConfigError{Err: err}
	}
	js := []float64{0.5, 0.6, 0.7, 0.75}
	for i := 80; i <= 100; i++ {
		js = append(js, float64(i)/100)
	}
	pts, err := crawl.MeasuredCurve(d, js, pairs)
	if err != nil {
		return err
	}
	WriteCurve(w, name, det, pts, pairs, d.URLTokens)
	return nil
}

// WriteCurve prints 'crawler dedup curve': P(match | Jaccard) of the filter
// name describes, in theory and measured end to end on pairs page pairs per
// row (pts) with the detector det, as a table with a bar per row.
func WriteCurve(w io.Writer, name string, det *dedup.Detector, pts []dedup.EndToEndPoint, pairs int, urlTokens bool) {
	o := det.Options()
	fmt.Fprintf(w, "P(match | Jaccard) for %s\n\n", name)
	fmt.Fprintf(w, "  theory:  the pair becomes a candidate of the filter or the band stage (the whole pipeline's\n")
	fmt.Fprintf(w, "           theory: every candidate above the threshold is settled; %s)\n", curveTheoryName(o))
	fmt.Fprintf(w, "  filter:  the first stage alone, P(k,s,r)(J)\n")
	fmt.Fprintf(w, "  settled: dropped end to end by the crawl's rule: candidates from the filter, bands and simhash,\n")
	fmt.Fprintf(w, "           one with at least %d of %d equal samples decided on its exact Jaccard (>= %g)\n", det.SettleFloor(), o.Samples, o.Threshold)
	fmt.Fprintf(w, "  sketch:  dropped by the sketch rule alone (estimated Jaccard >= %g)\n", o.Threshold)
	fmt.Fprintf(w, "  measured on %d page pairs per row at exactly that Jaccard of their %d-word looped shingles\n", pairs, o.ShingleWords)
	if urlTokens {
		fmt.Fprintf(w, "  with url_tokens the crawl cannot settle (the stored text lacks the URL tokens): it uses the sketch rule\n")
	}
	fmt.Fprintf(w, "\n  Jaccard    theory   settled    sketch    filter\n")
	for _, p := range pts {
		bar := strings.Repeat("#", int(p.Settled*40+0.5))
		line := fmt.Sprintf("  %7.3f  %8.4f  %8.4f  %8.4f  %8.4f  %s", p.J, p.Theory, p.Settled, p.Sketch, det.FilterCurve([]float64{p.J})[0], bar)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// curveTheoryName names the candidate curve of o.
func curveTheoryName(o dedup.Options) string {
	f := o.Filter.Resolved()
	if o.Bands <= 0 {
		return fmt.Sprintf("P(%d,%d,%d)(J), the filter alone", f.K, f.S, f.R)
	}
	return fmt.Sprintf("P(%d,%d,1)(J) and P(%d,%d,%d)(J) together", o.Bands, o.BandRows, f.K, f.S, f.R)
}
