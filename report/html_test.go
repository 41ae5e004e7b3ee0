package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
)

func renderHTML(t *testing.T, d *Data) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestWriteHTMLEscaping(t *testing.T) {
	d := sampleData(t)
	d.Filter = `"><script>alert(3)</script>`
	d.Mirrors[0].Host = "<img src=x onerror=alert(4)>"
	d.Pages[0].Host = "<svg onload=alert(5)>"
	out := renderHTML(t, d)

	if strings.Contains(strings.ToLower(out), "<script") {
		t.Error("output contains a <script> element")
	}
	for _, bad := range []string{"<img", "<svg onload", `href="javascript:`, "<b>bold</b>"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains unescaped %q", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",                                          // page title, as text
		"&lt;img src=x onerror=alert(4)&gt;",                                             // mirror host
		"&lt;svg onload=alert(5)&gt;",                                                    // host in table and chart
		`&#34;&gt;&lt;script&gt;alert(3)&lt;/script&gt;`,                                 // filter
		`&#34;quoted&#34; &amp; &lt;b&gt;bold&lt;/b&gt;`,                                 // title with quotes
		`<a href="#ZgotmplZ" rel="nofollow noopener noreferrer">javascript:alert(2)</a>`, // unsafe URL neutralized
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks escaped %q", want)
		}
	}
}

// svgs returns the inline <svg> elements of an HTML report.
func svgs(t *testing.T, out string) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`(?s)<svg id="([^"]+)".*?</svg>`)
	m := make(map[string]string)
	for _, match := range re.FindAllStringSubmatch(out, -1) {
		m[match[1]] = match[0]
	}
	return m
}

// xmlCount parses an SVG fragment as XML and counts its elements by name.
func xmlCount(t *testing.T, svg string) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	dec.Entity = xml.HTMLEntity
	counts := make(map[string]int)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("svg is not well-formed: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func TestWriteHTMLCharts(t *testing.T) {
	tests := []struct {
		name string
		d    *Data
		// rects in the histogram and the host chart, points of the curve
		histRects, hostRects, curvePoints int
	}{
		{"sample", sampleData(t), histBins, 12, 21},
		{"empty", &Data{}, histBins, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderHTML(t, tt.d)
			if n := strings.Count(out, "<svg"); n != 3 {
				t.Errorf("found %d <svg> elements, want 3", n)
			}
			charts := svgs(t, out)
			for _, id := range []string{"chart-similarity", "chart-hosts", "chart-filter"} {
				svg, ok := charts[id]
				if !ok {
					t.Errorf("no <svg id=%q>", id)
					continue
				}
				c := xmlCount(t, svg)
				if c["text"] < 2 {
					t.Errorf("%s: %d <text> elements, want axis labels", id, c["text"])
				}
			}
			if c := xmlCount(t, charts["chart-similarity"]); c["rect"] != tt.histRects {
				t.Errorf("histogram has %d bars, want %d", c["rect"], tt.histRects)
			}
			if c := xmlCount(t, charts["chart-hosts"]); c["rect"] != tt.hostRects {
				t.Errorf("host chart has %d bar segments, want %d", c["rect"], tt.hostRects)
			}
			pts := regexp.MustCompile(`points="([^"]*)"`).FindStringSubmatch(charts["chart-filter"])
			n := 0
			if pts != nil {
				n = len(strings.Fields(pts[1]))
			}
			if n != tt.curvePoints {
				t.Errorf("filter curve has %d points, want %d", n, tt.curvePoints)
			}
			for _, label := range []string{"Jaccard similarity J", "P(match | J)"} {
				if !strings.Contains(charts["chart-filter"], label) {
					t.Errorf("filter curve lacks axis label %q", label)
				}
			}
		})
	}
}

func TestSimilarityHistogram(t *testing.T) {
	pages := []Page{
		{Class: ClassNearDuplicate, Similarity: 0.75},  // first bin
		{Class: ClassNearDuplicate, Similarity: 0.5},   // below the range: first bin
		{Class: ClassNearDuplicate, Similarity: 0.774}, // first bin
		{Class: ClassNearDuplicate, Similarity: 0.776}, // second bin
		{Class: ClassNearDuplicate, Similarity: 0.99},  // last bin
		{Class: ClassNearDuplicate, Similarity: 1},     // last bin
		{Class: ClassExactDuplicate, Similarity: 1},    // not a near-duplicate
		{Class: ClassUnique},
	}
	got := similarityHistogram(pages)
	want := [histBins]int{3, 1, 0, 0, 0, 0, 0, 0, 0, 2}
	if got != want {
		t.Errorf("histogram = %v, want %v", got, want)
	}
}

func TestWriteHTMLSelfContained(t *testing.T) {
	out := renderHTML(t, sampleData(t))
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", " src=", "url(", "@import"} {
		if strings.Contains(strings.ToLower(out), bad) {
			t.Errorf("output contains %q: not self-contained", bad)
		}
	}
	for _, want := range []string{"<!DOCTYPE html>", "<style>", `<meta charset="utf-8">`, "</html>"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestWriteHTMLContent(t *testing.T) {
	out := renderHTML(t, sampleData(t))
	for _, want := range []string{
		`id="summary"`, `id="hosts"`, `id="clusters"`, `id="mirrors"`, `id="replicated"`, `id="errors"`,
		"<details open>", // the largest cluster is open
		"<td class=\"url\">10.0.0.10:8080</td>",
		"mirror.example.org/docs/</td><td class=\"url\">www.example.com/</td>", // mirror and original
		"19 of 20", "8 of 8", // evidence
		"<td class=\"n\">41</td>", "<td class=\"n\">12</td>", // requests saved
		"dial tcp: connection refused", // an error page
		"4 clusters, 8 duplicate pages",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "<details"); n != 5 {
		t.Errorf("found %d <details>, want 4 clusters + 1 error list", n)
	}
	// Host rows follow the numeric-aware order.
	if i, j := strings.Index(out, ">10.0.0.9:8080</td>"), strings.Index(out, ">10.0.0.10:8080</td>"); i < 0 || j < i {
		t.Errorf("host table not in numeric order: %d, %d", i, j)
	}
}

func TestWriteHTMLLimits(t *testing.T) {
	d := &Data{}
	for i := range htmlClusterMembers + 50 {
		d.Pages = append(d.Pages, Page{URL: fmt.Sprintf("http://a.test/%d", i), Class: ClassExactDuplicate,
			DuplicateOf: "http://a.test/", Similarity: 1, Method: MethodExact})
	}
	for i := range htmlClusters + 10 {
		d.Pages = append(d.Pages, Page{URL: fmt.Sprintf("http://b.test/%d", i), Class: ClassNearDuplicate,
			DuplicateOf: fmt.Sprintf("http://b.test/orig/%d", i), Similarity: 0.9, Method: MethodSimhash})
	}
	for i := range hostChartMax + 5 {
		d.Pages = append(d.Pages, Page{URL: fmt.Sprintf("http://h%d.test/", i), Class: ClassUnique})
	}
	out := renderHTML(t, d)
	for _, want := range []string{
		"… and 50 more members (see the JSON report).",
		fmt.Sprintf("Showing the %d largest of %d clusters", htmlClusters, htmlClusters+11),
		fmt.Sprintf("the %d hosts with the most pages of %d", hostChartMax, hostChartMax+7),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "<details"); n != htmlClusters {
		t.Errorf("%d clusters listed, want %d", n, htmlClusters)
	}
	// The hosts with the most pages are kept: a.test and b.test.
	hosts := svgs(t, out)["chart-hosts"]
	for _, h := range []string{">a.test<", ">b.test<"} {
		if !strings.Contains(hosts, h) {
			t.Errorf("host chart lacks %s", h)
		}
	}
	if n := strings.Count(hosts, `class="host"`); n != hostChartMax {
		t.Errorf("host chart has %d hosts, want %d", n, hostChartMax)
	}
}

func TestFormatInt(t *testing.T) {
	tests := []struct {
		in   int
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {123456, "123,456"}, {1234567, "1,234,567"},
		{-1234, "-1,234"}, {-999, "-999"},
	}
	for _, tt := range tests {
		if got := formatInt(tt.in); got != tt.want {
			t.Errorf("formatInt(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHostsCardNote(t *testing.T) {
	tests := []struct {
		hosts int
		want  string
	}{
		{0, `<div class="sub">0 hosts</div>`}, {1, `<div class="sub">1 host</div>`}, {1234, `<div class="sub">1,234 hosts</div>`},
	}
	for _, tt := range tests {
		d := &Data{Stats: Stats{Hosts: tt.hosts}}
		if out := renderHTML(t, d); !strings.Contains(out, tt.want) {
			t.Errorf("%d hosts: output lacks %s", tt.hosts, tt.want)
		}
	}
}

// TestWriteHTMLEndToEndCurve: the measured end-to-end curve is drawn next
// to the filter's, as a second polyline with a dot per point and a legend,
// and is written to JSON sorted by Jaccard; without it the chart is as before
// and the JSON has no end_to_end_curve.
func TestWriteHTMLEndToEndCurve(t *testing.T) {
	d := sampleData(t)
	d.EndToEnd = []CurvePoint{{Jaccard: 0.97, Probability: 0.99}, {Jaccard: 0.9, Probability: 0}, {Jaccard: 0.95, Probability: 0.93}}
	svg := svgs(t, renderHTML(t, d))["chart-filter"]
	c := xmlCount(t, svg)
	if c["polyline"] != 2 {
		t.Fatalf("filter chart has %d polylines, want the theory and the measured curve", c["polyline"])
	}
	m := regexp.MustCompile(`<polyline class="curve measured" points="([^"]*)"`).FindStringSubmatch(svg)
	if m == nil || len(strings.Fields(m[1])) != 3 {
		t.Errorf("measured curve %q, want 3 points", m)
	}
	if n := strings.Count(svg, `<circle class="measured"`); n != 3 {
		t.Errorf("%d measured dots, want 3", n)
	}
	if !strings.Contains(svg, "J = 0.950: dropped 0.930 (measured)") {
		t.Error("measured dot lacks its tooltip")
	}
	out := renderHTML(t, d)
	if !strings.Contains(out, "dropped, measured end to end") || !strings.Contains(out, "Dashed: measured end to end") {
		t.Error("no legend or caption for the measured curve")
	}

	var buf bytes.Buffer
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"end_to_end_curve": [
    {
      "jaccard": 0.9,`) {
		t.Errorf("end_to_end_curve missing or unsorted:\n%s", buf.String())
	}

	d.EndToEnd = nil
	if c := xmlCount(t, svgs(t, renderHTML(t, d))["chart-filter"]); c["polyline"] != 1 {
		t.Errorf("without a measured curve: %d polylines, want 1", c["polyline"])
	}
	buf.Reset()
	if err := WriteJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "end_to_end_curve") {
		t.Error("end_to_end_curve written without a measured curve")
	}
}
