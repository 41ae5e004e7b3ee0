package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
)

// Limits of the HTML report; the JSON report always has everything.
const (
	htmlClusters       = 500 // clusters listed
	htmlClusterMembers = 200 // members listed per cluster
	htmlErrors         = 200 // error pages listed
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is parsed once; a parsed template is immutable and safe for
// concurrent use.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":   formatInt,
	"pct":   func(r float64) string { return strconv.FormatFloat(100*r, 'f', 1, 64) + "%" },
	"f1":    func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"f3":    func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"pct1":  cssPercent,
	"half":  func(v float64) float64 { return v / 2 },
	"css":   cssClass,
	"time":  formatTime,
	"num64": func(n int64) string { return formatInt(int(n)) },
	"dups":  duplicates,
}).Parse(htmlSource))

type card struct {
	Label, Value, Note, Class string
}

type classRow struct {
	Name, CSS string
	Count     int
	Share     float64
}

type htmlCluster struct {
	Representative string
	Title          string // title of the representative, when it is a page of the crawl
	Members        []Page
	Size           int
	More           int // members not listed
	MinSim, MaxSim float64
}

type htmlView struct {
	D             *Data
	Duration      string
	Cards         []card
	Classes       []classRow
	Hosts         []HostRow
	HostTotal     HostRow
	Clusters      []htmlCluster
	ClusterCount  int
	Duplicates    int // pages in clusters
	Errors        []Page
	ErrorCount    int
	RequestsSaved int
	Charts        []chart // similarity histogram, filter curve
	HostChart     chart
}

// WriteHTML writes the report as one self-contained HTML file: inline CSS,
// inline SVG charts, no scripts and no external resources. It holds the
// summary, pages by class, the per-host table, the duplicate clusters
// (collapsible <details>), mirrors and replicated prefixes with their evidence
// and savings, error pages, and three charts: a histogram of near-duplicate
// similarity, the classes per host, and the supershingle filter curve. Every
// string from the web is escaped by html/template.
func WriteHTML(w io.Writer, d *Data) error {
	if d == nil {
		return fmt.Errorf("report: write html: %w", ErrNilData)
	}
	bw := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(bw, newHTMLView(normalized(d))); err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	return nil
}

func newHTMLView(d *Data) *htmlView {
	v := &htmlView{D: d, Duration: duration(d.Stats), RequestsSaved: RequestsSaved(d)}

	total := 0
	for _, n := range d.Stats.ByClass {
		total += n
	}
	for _, c := range classOrder(d.Stats.ByClass) {
		r := classRow{Name: c, CSS: cssClass(c), Count: d.Stats.ByClass[c]}
		if total > 0 {
			r.Share = float64(r.Count) / float64(total)
		}
		v.Classes = append(v.Classes, r)
	}

	v.Hosts = Hosts(d)
	for _, r := range v.Hosts {
		v.HostTotal.Fetched += r.Fetched
		v.HostTotal.Unique += r.Unique
		v.HostTotal.Exact += r.Exact
		v.HostTotal.Near += r.Near
		v.HostTotal.MirrorSkipped += r.MirrorSkipped
		v.HostTotal.Other += r.Other
	}
	t := &v.HostTotal
	if dup := t.Exact + t.Near + t.MirrorSkipped; dup+t.Unique > 0 {
		t.DupRatio = float64(dup) / float64(dup+t.Unique)
	}

	titles := make(map[string]string, len(d.Pages))
	for i := range d.Pages {
		if d.Pages[i].Title != "" {
			titles[d.Pages[i].URL] = d.Pages[i].Title
		}
	}
	clusters := Clusters(d)
	v.ClusterCount = len(clusters)
	for i, c := range clusters {
		v.Duplicates += len(c.Members)
		if i >= htmlClusters {
			continue
		}
		hc := htmlCluster{
			Representative: c.Representative,
			Title:          titles[c.Representative],
			Size:           len(c.Members),
			Members:        c.Members[:min(len(c.Members), htmlClusterMembers)],
			More:           max(len(c.Members)-htmlClusterMembers, 0),
			MinSim:         c.Members[len(c.Members)-1].Similarity,
			MaxSim:         c.Members[0].Similarity,
		}
		v.Clusters = append(v.Clusters, hc)
	}

	for _, p := range d.Pages {
		if p.Class != ClassError {
			continue
		}
		v.ErrorCount++
		if len(v.Errors) < htmlErrors {
			v.Errors = append(v.Errors, p)
		}
	}

	bc := d.Stats.ByClass
	v.Cards = []card{
		{Label: "Pages", Value: formatInt(d.Stats.Pages), Note: formatInt(d.Stats.Hosts) + " " + plural(d.Stats.Hosts, "host", "hosts")},
		{Label: "Requests", Value: formatInt(d.Stats.Requests), Note: "including robots.txt"},
		{Label: "Unique", Value: formatInt(bc[ClassUnique]), Class: "c-unique"},
		{Label: "Exact duplicates", Value: formatInt(bc[ClassExactDuplicate]), Class: "c-exact_duplicate"},
		{Label: "Near duplicates", Value: formatInt(bc[ClassNearDuplicate]), Class: "c-near_duplicate"},
		{Label: "Mirror-skipped", Value: formatInt(bc[ClassMirrorSkipped]), Class: "c-mirror_skipped",
			Note: formatInt(v.RequestsSaved) + " requests saved"},
	}
	v.Charts = []chart{histogramChart(d.Pages), curveChart(d.Curve, d.EndToEnd, d.Filter)}
	v.HostChart = hostChart(d.Pages)
	return v
}

// formatInt formats n with comma thousands separators: 1234567 → "1,234,567".
func formatInt(n int) string {
	s := strconv.Itoa(n)
	start := 0
	if n < 0 {
		start = 1
	}
	digits := len(s) - start
	if digits <= 3 {
		return s
	}
	out := make([]byte, 0, len(s)+digits/3)
	out = append(out, s[:start]...)
	first := digits % 3
	if first == 0 {
		first = 3
	}
	out = append(out, s[start:start+first]...)
	for i := start + first; i < len(s); i += 3 {
		out = append(out, ',')
		out = append(out, s[i:i+3]...)
	}
	return string(out)
}

// cssPercent converts a ratio to a CSS width in percent, clamped to 0..100.
func cssPercent(r float64) float64 {
	if math.IsNaN(r) {
		return 0
	}
	return 100 * min(max(r, 0), 1)
}
