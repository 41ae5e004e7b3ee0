package report

import (
	"fmt"
	"math"
	"slices"
)

// The charts are computed here as plain geometry (rectangles, lines, text)
// and drawn by the HTML template, so that every label, including host names
// from the web, goes through html/template's escaping.

type svgRect struct {
	X, Y, W, H float64
	Class      string // CSS class: the fill
	Tip        string // tooltip, drawn as an SVG <title>
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type svgText struct {
	X, Y   float64
	Anchor string // start, middle, end
	Class  string
	Rotate bool // rotate -90° about (X, Y), for a vertical axis label
	Text   string
	Tip    string // full text when Text is shortened
}

type svgDot struct {
	X, Y float64
	Tip  string
}

type legendItem struct {
	Class, Label string
}

// chart is one inline SVG chart.
type chart struct {
	ID      string
	Title   string // accessible name, also the figure caption
	Caption string // explanation under the chart
	W, H    float64
	Grid    []svgLine
	Axes    []svgLine
	Rects   []svgRect
	Texts   []svgText
	Points  string // polyline points, "x,y x,y ..."
	Dots    []svgDot
	// Measured is a second series over the same axes (the measured
	// end-to-end curve), drawn dashed with its own dots.
	Measured     string
	MeasuredDots []svgDot
	Legend       []legendItem
	Empty        string // shown in the plot area when there is no data
}

// Histogram of near-duplicate similarity.
const (
	histLo, histHi = 0.75, 1.0
	histBins       = 10
)

// similarityHistogram counts near-duplicate pages by similarity in
// histBins equal bins over [histLo, histHi]; values outside the range are
// counted in the first or last bin.
func similarityHistogram(pages []Page) [histBins]int {
	var bins [histBins]int
	for i := range pages {
		if pages[i].Class != ClassNearDuplicate {
			continue
		}
		s := pages[i].Similarity
		if math.IsNaN(s) {
			continue
		}
		b := int(math.Floor((s - histLo) / (histHi - histLo) * histBins))
		bins[min(max(b, 0), histBins-1)]++
	}
	return bins
}

// frame holds the plot area of a chart with two linear axes.
type frame struct {
	left, top, width, height float64
}

func (f frame) x(v, lo, hi float64) float64 { return f.left + (v-lo)/(hi-lo)*f.width }
func (f frame) y(v, lo, hi float64) float64 { return f.top + f.height - (v-lo)/(hi-lo)*f.height }
func (f frame) bottom() float64             { return f.top + f.height }
func (f frame) right() float64              { return f.left + f.width }

// axes adds the two axis lines and their labels.
func (f frame) axes(c *chart, xLabel, yLabel string) {
	c.Axes = append(c.Axes,
		svgLine{X1: f.left, Y1: f.bottom(), X2: f.right(), Y2: f.bottom(), Class: "axis"},
		svgLine{X1: f.left, Y1: f.top, X2: f.left, Y2: f.bottom(), Class: "axis"},
	)
	c.Texts = append(c.Texts,
		svgText{X: f.left + f.width/2, Y: f.bottom() + 38, Anchor: "middle", Class: "label", Text: xLabel},
		svgText{X: f.left - 40, Y: f.top + f.height/2, Anchor: "middle", Class: "label", Rotate: true, Text: yLabel},
	)
}

// yTicks adds horizontal grid lines and tick labels from 0 to hi.
func (f frame) yTicks(c *chart, hi, step float64, format string) {
	for v := 0.0; v <= hi+step/2; v += step {
		y := f.y(v, 0, hi)
		c.Grid = append(c.Grid, svgLine{X1: f.left, Y1: y, X2: f.right(), Y2: y, Class: "grid"})
		c.Texts = append(c.Texts, svgText{X: f.left - 6, Y: y + 4, Anchor: "end", Class: "tick", Text: fmt.Sprintf(format, v)})
	}
}

// niceStep returns the smallest of 1, 2, 5 times a power of ten that is at
// least v, and at least minStep.
func niceStep(v, minStep float64) float64 {
	if v <= minStep {
		return minStep
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func histogramChart(pages []Page) chart {
	bins := similarityHistogram(pages)
	c := chart{
		ID:    "chart-similarity",
		Title: "Near-duplicate similarity",
		Caption: fmt.Sprintf("Jaccard resemblance of near-duplicate pages to their originals (exact when settled on the shingle sets), "+
			"in %d bins over %.2f–%.2f.", histBins, histLo, histHi),
		W: 480, H: 290,
	}
	f := frame{left: 56, top: 16, width: 404, height: 214}
	most := slices.Max(bins[:])
	step := niceStep(float64(max(most, 1))/4, 1)
	hi := step * math.Ceil(float64(max(most, 1))/step)
	f.yTicks(&c, hi, step, "%.0f")
	bw := f.width / histBins
	for i, n := range bins {
		lo := histLo + float64(i)*(histHi-histLo)/histBins
		up := lo + (histHi-histLo)/histBins
		top := f.y(float64(n), 0, hi)
		c.Rects = append(c.Rects, svgRect{
			X: f.left + float64(i)*bw + 1.5, Y: top, W: bw - 3, H: f.bottom() - top,
			Class: "c-near_duplicate",
			Tip:   fmt.Sprintf("%.3f–%.3f: %d pages", lo, up, n),
		})
		if n > 0 {
			c.Texts = append(c.Texts, svgText{
				X: f.left + (float64(i)+0.5)*bw, Y: top - 4, Anchor: "middle", Class: "value", Text: fmt.Sprint(n),
			})
		}
	}
	for i := 0; i <= histBins; i += 2 {
		v := histLo + float64(i)*(histHi-histLo)/histBins
		x := f.x(v, histLo, histHi)
		c.Texts = append(c.Texts, svgText{X: x, Y: f.bottom() + 16, Anchor: "middle", Class: "tick", Text: fmt.Sprintf("%.2f", v)})
	}
	f.axes(&c, "Jaccard similarity", "near-duplicate pages")
	if most == 0 {
		c.Empty = "no near-duplicates found"
	}
	return c
}

// Stacked host chart.
const (
	hostChartMax   = 60 // hosts drawn
	hostRowHeight  = 22.0
	hostLabelWidth = 30 // columns of a host label
)

// hostChart draws one bar per host, stacked by class in the order of
// Classes(); unknown classes are drawn as "other".
func hostChart(pages []Page) chart {
	stackClasses := Classes()
	type hostCounts struct {
		host   string
		counts []int // per stackClasses, then "other"
		total  int
	}
	idx := make(map[string]int)
	var hosts []hostCounts
	for i := range pages {
		h := PageHost(&pages[i])
		j, ok := idx[h]
		if !ok {
			j = len(hosts)
			idx[h] = j
			hosts = append(hosts, hostCounts{host: h, counts: make([]int, len(stackClasses)+1)})
		}
		k := slices.Index(stackClasses, pages[i].Class)
		if k < 0 {
			k = len(stackClasses)
		}
		hosts[j].counts[k]++
		hosts[j].total++
	}
	all := len(hosts)
	if len(hosts) > hostChartMax {
		// Keep the hosts with the most pages.
		slices.SortStableFunc(hosts, func(a, b hostCounts) int { return b.total - a.total })
		hosts = hosts[:hostChartMax]
	}
	slices.SortFunc(hosts, func(a, b hostCounts) int { return naturalCompare(a.host, b.host) })

	c := chart{
		ID:      "chart-hosts",
		Title:   "Page classes per host",
		Caption: "Page records per host, stacked by class.",
		W:       960,
	}
	if len(hosts) < all {
		c.Caption = fmt.Sprintf("Page records per host, stacked by class: the %d hosts with the most pages of %d.",
			len(hosts), all)
	}
	for _, cl := range stackClasses {
		c.Legend = append(c.Legend, legendItem{Class: cssClass(cl), Label: cl})
	}
	c.Legend = append(c.Legend, legendItem{Class: "c-other", Label: "other"})

	rows := max(len(hosts), 1)
	f := frame{left: 230, top: 10, width: 680, height: float64(rows) * hostRowHeight}
	c.H = f.bottom() + 50
	most := 1
	for _, h := range hosts {
		most = max(most, h.total)
	}
	step := niceStep(float64(most)/5, 1)
	hi := step * math.Ceil(float64(most)/step)
	for v := 0.0; v <= hi+step/2; v += step {
		x := f.x(v, 0, hi)
		c.Grid = append(c.Grid, svgLine{X1: x, Y1: f.top, X2: x, Y2: f.bottom(), Class: "grid"})
		c.Texts = append(c.Texts, svgText{X: x, Y: f.bottom() + 16, Anchor: "middle", Class: "tick", Text: fmt.Sprintf("%.0f", v)})
	}
	for i, h := range hosts {
		y := f.top + float64(i)*hostRowHeight
		label := truncateMiddle(h.host, hostLabelWidth)
		t := svgText{X: f.left - 8, Y: y + hostRowHeight/2 + 4, Anchor: "end", Class: "host", Text: label}
		if label != h.host {
			t.Tip = h.host
		}
		c.Texts = append(c.Texts, t)
		x := f.left
		for k, n := range h.counts {
			if n == 0 {
				continue
			}
			name := "other"
			if k < len(stackClasses) {
				name = stackClasses[k]
			}
			w := float64(n) / hi * f.width
			c.Rects = append(c.Rects, svgRect{
				X: x, Y: y + 3, W: w, H: hostRowHeight - 6, Class: cssClass(name),
				Tip: fmt.Sprintf("%s: %d %s", h.host, n, name),
			})
			x += w
		}
		c.Texts = append(c.Texts, svgText{X: x + 5, Y: y + hostRowHeight/2 + 4, Anchor: "start", Class: "value", Text: fmt.Sprint(h.total)})
	}
	c.Axes = append(c.Axes,
		svgLine{X1: f.left, Y1: f.bottom(), X2: f.right(), Y2: f.bottom(), Class: "axis"},
		svgLine{X1: f.left, Y1: f.top, X2: f.left, Y2: f.bottom(), Class: "axis"},
	)
	c.Texts = append(c.Texts, svgText{X: f.left + f.width/2, Y: f.bottom() + 38, Anchor: "middle", Class: "label", Text: "pages"})
	if len(hosts) == 0 {
		c.Empty = "no pages recorded"
	}
	return c
}

// curveChart draws the supershingle filter curve P(match | J) and, when
// measured, the end-to-end curve next to it.
func curveChart(points, measured []CurvePoint, filter string) chart {
	c := chart{
		ID:    "chart-filter",
		Title: "Supershingle filter curve",
		Caption: "Probability that two documents with resemblance J share a supershingle key " +
			"and become candidates: P(match | J).",
		W: 480, H: 290,
	}
	if filter != "" {
		c.Caption += " Filter: " + filter + "."
	}
	if len(measured) > 0 {
		c.Caption += " Dashed: measured end to end, the share of constructed page pairs at exactly J " +
			"that the crawl's detector drops (candidates from the filter and simhash, near the threshold " +
			"settled on the exact Jaccard)."
		c.Legend = []legendItem{{Class: "s-theory", Label: "filter, theory"}, {Class: "s-measured", Label: "dropped, measured end to end"}}
	}
	f := frame{left: 56, top: 16, width: 404, height: 214}
	f.yTicks(&c, 1, 0.2, "%.1f")
	for v := 0.0; v <= 1.0001; v += 0.2 {
		x := f.x(v, 0, 1)
		c.Grid = append(c.Grid, svgLine{X1: x, Y1: f.top, X2: x, Y2: f.bottom(), Class: "grid"})
		c.Texts = append(c.Texts, svgText{X: x, Y: f.bottom() + 16, Anchor: "middle", Class: "tick", Text: fmt.Sprintf("%.1f", v)})
	}
	f.axes(&c, "Jaccard similarity J", "P(match | J)")
	var pts []byte
	for _, p := range points {
		if math.IsNaN(p.Jaccard) || math.IsNaN(p.Probability) {
			continue
		}
		j := min(max(p.Jaccard, 0), 1)
		pr := min(max(p.Probability, 0), 1)
		x, y := f.x(j, 0, 1), f.y(pr, 0, 1)
		if len(pts) > 0 {
			pts = append(pts, ' ')
		}
		pts = fmt.Appendf(pts, "%.1f,%.1f", x, y)
		c.Dots = append(c.Dots, svgDot{X: x, Y: y, Tip: fmt.Sprintf("J = %.3f: P = %.4f", p.Jaccard, p.Probability)})
	}
	c.Points = string(pts)
	if len(c.Dots) > 40 {
		c.Dots = nil // a dense curve reads better as a line alone
	}
	pts = nil
	for _, p := range measured {
		if math.IsNaN(p.Jaccard) || math.IsNaN(p.Probability) {
			continue
		}
		x, y := f.x(min(max(p.Jaccard, 0), 1), 0, 1), f.y(min(max(p.Probability, 0), 1), 0, 1)
		if len(pts) > 0 {
			pts = append(pts, ' ')
		}
		pts = fmt.Appendf(pts, "%.1f,%.1f", x, y)
		c.MeasuredDots = append(c.MeasuredDots, svgDot{X: x, Y: y, Tip: fmt.Sprintf("J = %.3f: dropped %.3f (measured)", p.Jaccard, p.Probability)})
	}
	c.Measured = string(pts)
	if len(c.MeasuredDots) > 40 {
		c.MeasuredDots = nil
	}
	if c.Points == "" {
		c.Empty = "no filter curve in the data"
	}
	return c
}

// cssClass maps a page class to the CSS class that colours it.
func cssClass(class string) string {
	switch class {
	case ClassUnique, ClassExactDuplicate, ClassNearDuplicate, ClassMirrorSkipped,
		ClassRobotsDisallowed, ClassNotHTML, ClassError:
		return "c-" + class
	}
	return "c-other"
}
