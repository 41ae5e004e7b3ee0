package crawl

import (
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// FilterCurve returns the configured candidate stages' description (the
// supershingle filter, then the band stage when on) and the probability that
// a pair becomes a candidate (Detector.Curve: the whole pipeline's theory,
// settlement deciding every candidate above the threshold) at J = 0.50,
// 0.51, ..., 1.00.
func FilterCurve(d configs.Dedup) (string, []report.CurvePoint, error) {
	det, err := dedup.New(DedupOptions(d))
	if err != nil {
		return "", nil, ConfigError{err}
	}
	var js []float64
	for i := 50; i <= 100; i++ {
		js = append(js, float64(i)/100)
	}
	ps := det.Curve(js)
	pts := make([]report.CurvePoint, len(js))
	for i := range js {
		pts[i] = report.CurvePoint{Jaccard: js[i], Probability: ps[i]}
	}
	o := det.Options()
	f := o.Filter.Resolved()
	name := FilterName(d.Filter, f.K, f.S, f.R, f.Bits)
	if o.Bands > 0 {
		name += fmt.Sprintf("; or %d bands of %d samples, match if 1 agrees", o.Bands, o.BandRows)
	}
	return name, pts, nil
}

// End-to-end curve of the report: the Jaccard values, the pairs per value
// (a standard error of at most 0.035 per point) and the fixed seed that keeps
// the report deterministic. About 0.5 s.
const (
	reportCurvePairs = 200
	curveSeed        = 1
)

var reportCurveJaccards = []float64{0.5, 0.7, 0.8, 0.85, 0.88, 0.9, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 1}

// MeasuredCurve runs dedup.EndToEndCurve for the configured detector.
func MeasuredCurve(d configs.Dedup, js []float64, pairs int) ([]dedup.EndToEndPoint, error) {
	pts, err := dedup.EndToEndCurve(DedupOptions(d), js, pairs, curveSeed)
	if err != nil {
		return nil, ConfigError{err}
	}
	return pts, nil
}

// EndToEndCurve returns the share of page pairs at each Jaccard that the
// crawl's detector drops, measured on constructed pairs (dedup.EndToEndCurve):
// with exact settlement, or by the sketch rule when url_tokens is on (the
// crawl cannot settle then: its tokens hold URLs the stored text lacks).
func EndToEndCurve(d configs.Dedup) ([]report.CurvePoint, error) {
	pts, err := MeasuredCurve(d, reportCurveJaccards, reportCurvePairs)
	if err != nil {
		return nil, err
	}
	out := make([]report.CurvePoint, len(pts))
	for i, p := range pts {
		out[i] = report.CurvePoint{Jaccard: p.J, Probability: p.Settled}
		if d.URLTokens {
			out[i].Probability = p.Sketch
		}
	}
	return out, nil
}

// Curves are a report's curves of the configured detector: the
// supershingle filter's name and theory (FilterCurve) and the measured
// end-to-end curve (EndToEndCurve).
type Curves struct {
	Filter          string
	Curve, EndToEnd []report.CurvePoint
}

// ReportCurves computes the curves of the detector d configures (about
// 0.5 s: compute them once for several stores).
func ReportCurves(d configs.Dedup) (Curves, error) {
	var c Curves
	var err error
	if c.Filter, c.Curve, err = FilterCurve(d); err != nil {
		return c, err
	}
	c.EndToEnd, err = EndToEndCurve(d)
	return c, err
}

// Report reads a crawl's store into the report model, with the curves of
// the detector d configures and what the store found damaged.
func Report(db *storage.DB, d configs.Dedup) (*report.Data, error) {
	c, err := ReportCurves(d)
	if err != nil {
		return nil, err
	}
	return ReportWith(db, c)
}

// ReportWith is Report with the curves c.
func ReportWith(db *storage.DB, c Curves) (*report.Data, error) {
	data, err := ReportData(db, c.Filter, c.Curve)
	if err != nil {
		return nil, fmt.Errorf("cannot read crawl: %w", err)
	}
	data.EndToEnd = c.EndToEnd
	for _, dm := range db.Damage() {
		data.Damage = append(data.Damage, dm.File+": "+dm.What)
	}
	return data, nil
}
