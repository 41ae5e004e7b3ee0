//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/report"
)

// The browser tests load HTML reports in Debian's headless Chromium through
// the npm package playwright-core (testdata/browser/check.cjs) and assert on
// what a person would see.
//
// Chromium is /usr/bin/chromium or $HORSESHOE_CHROMIUM (.ci/run installs the
// Debian package). The driver is $HORSESHOE_PLAYWRIGHT (the playwright-core
// package directory) or installed by scripts/install-browser-deps.sh into a
// cache outside the repository. Without them the tests skip, except under CI,
// where they fail. Screenshots go to the test's temporary directory, or to
// $HORSESHOE_SCREENSHOTS when set, so that they outlive the test.

// browser is a ready Chromium and driver.
type browser struct {
	node, chromium, driver, script string
}

// browserResult is what check.cjs reports about one page.
type browserResult struct {
	Console []struct {
		Type, Text string
	}
	PageErrors []string
	Dialogs    []struct {
		Type, Message string
	}
	Requests []string
	Texts    map[string]bool
	Title    string
	H1       string
	BodyText string
	Scripts  int
	Cards    []struct {
		Label, Value  string
		Width, Height float64
	}
	Charts []struct {
		ID, Title     string
		Shapes        int
		Width, Height float64
		Curves        []struct {
			Class, Stroke, Dash string
			Width, Height       float64
		}
	}
	HostRows    [][]string
	WorkerRows  [][]string // the workers table's rows: head, one per worker, the crawl's totals
	Clusters    int
	ScrollWidth int
	ClientWidth int
}

// needBrowser finds node, Chromium and playwright-core, or skips the test
// (fails it under CI).
func needBrowser(t *testing.T) *browser {
	t.Helper()
	b := &browser{chromium: os.Getenv("HORSESHOE_CHROMIUM")}
	if b.chromium == "" {
		b.chromium = "/usr/bin/chromium"
	}
	if fi, err := os.Stat(b.chromium); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		testtools.Require(t, false, "Chromium at "+b.chromium, "apt-get install chromium, or set HORSESHOE_CHROMIUM=PATH")
	}
	b.node = testtools.Node(t)
	script, err := filepath.Abs(filepath.Join("testdata", "browser", "check.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	b.script = script
	b.driver = testtools.Installed(t, "HORSESHOE_PLAYWRIGHT", "install-browser-deps.sh")
	if _, err := os.Stat(filepath.Join(b.driver, "package.json")); err != nil {
		testtools.Require(t, false, "playwright-core at HORSESHOE_PLAYWRIGHT="+b.driver+" ("+err.Error()+")", "bash scripts/install-browser-deps.sh (or make test-deps)")
	}
	return b
}

// screenshotPath returns where the screenshot named name goes.
func screenshotPath(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("HORSESHOE_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, name)
	}
	return filepath.Join(t.TempDir(), name)
}

// load opens page in Chromium, writes a full-page screenshot to shot and
// reports what the page showed; texts are looked up in the visible text.
func (b *browser) load(t *testing.T, page, shot string, texts ...string) *browserResult {
	t.Helper()
	args := []string{b.script, "--chromium", b.chromium, "--page", page, "--screenshot", shot,
		"--profile", filepath.Join(t.TempDir(), "profile")}
	for _, s := range texts {
		args = append(args, "--text", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.node, args...)
	cmd.Env = append(os.Environ(), "HORSESHOE_PLAYWRIGHT="+b.driver)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser check of %s: %v\n%s", page, err, stderr.String())
	}
	var r browserResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("browser check output: %v\n%s", err, stdout.String())
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
	return &r
}

// assertClean checks that the page ran no script, raised no error, opened
// no dialog and loaded nothing from outside the file.
func (r *browserResult) assertClean(t *testing.T) {
	t.Helper()
	for _, m := range r.Console {
		if m.Type == "error" || m.Type == "warning" {
			t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
	for _, e := range r.PageErrors {
		t.Errorf("page error: %s", e)
	}
	for _, d := range r.Dialogs {
		t.Errorf("a %s dialog fired: %q", d.Type, d.Message)
	}
	for _, u := range r.Requests {
		t.Errorf("the self-contained report requested %s", u)
	}
	if r.Scripts != 0 {
		t.Errorf("%d <script> elements in the report", r.Scripts)
	}
	if r.ScrollWidth > r.ClientWidth {
		t.Errorf("page scrolls sideways: %d px of content in %d px", r.ScrollWidth, r.ClientWidth)
	}
}

func writeHTMLReport(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "html", "--out", path}, &out, &errOut); err != nil {
		t.Fatalf("report: %v\n%s", err, errOut.String())
	}
	return path
}

func TestBrowserCorpusReport(t *testing.T) {
	b := needBrowser(t)
	c := crawlCorpus(t)
	r := b.load(t, writeHTMLReport(t, c.data), screenshotPath(t, "corpus-report.png"),
		"Summary", "Duplicate clusters", "Mirrors")
	r.assertClean(t)

	if r.Title != "Horseshoe crawl report" || !strings.HasPrefix(r.H1, "Horseshoe") {
		t.Errorf("title %q, h1 %q", r.Title, r.H1)
	}
	for text, seen := range r.Texts {
		if !seen {
			t.Errorf("%q is not visible", text)
		}
	}

	// Summary cards: visible, with the crawl's figures.
	st := c.report.Stats
	wantCards := map[string]string{
		"Pages":            formatThousands(st.Pages),
		"Requests":         formatThousands(st.Requests),
		"Unique":           formatThousands(st.ByClass["unique"]),
		"Exact duplicates": formatThousands(st.ByClass["exact_duplicate"]),
		"Near duplicates":  formatThousands(st.ByClass["near_duplicate"]),
		"Mirror-skipped":   formatThousands(st.ByClass["mirror_skipped"]),
	}
	if len(r.Cards) != len(wantCards) {
		t.Errorf("%d summary cards, want %d", len(r.Cards), len(wantCards))
	}
	for _, card := range r.Cards {
		label := strings.ToLower(card.Label)
		found := false
		for l, v := range wantCards {
			if strings.ToLower(l) == label {
				found = true
				if card.Value != v {
					t.Errorf("card %q shows %q, want %q", card.Label, card.Value, v)
				}
			}
		}
		if !found {
			t.Errorf("unexpected card %q", card.Label)
		}
		if card.Width < 100 || card.Height < 40 {
			t.Errorf("card %q is %.0fx%.0f px", card.Label, card.Width, card.Height)
		}
	}

	// Three charts, drawn with a real size and something in them.
	if len(r.Charts) != 3 {
		t.Fatalf("%d charts, want 3: %+v", len(r.Charts), r.Charts)
	}
	for _, ch := range r.Charts {
		if ch.Width < 300 || ch.Height < 150 {
			t.Errorf("chart %s (%s) is %.0fx%.0f px", ch.ID, ch.Title, ch.Width, ch.Height)
		}
		if ch.Shapes == 0 {
			t.Errorf("chart %s (%s) draws nothing", ch.ID, ch.Title)
		}
		if ch.ID != "chart-filter" {
			continue
		}
		// The filter's theoretical curve and the measured end-to-end
		// curve: both drawn across the plot, told apart by colour and dash.
		if len(ch.Curves) != 2 {
			t.Errorf("filter chart draws %d curves, want the theory and the measured one: %+v", len(ch.Curves), ch.Curves)
			continue
		}
		theory, measured := ch.Curves[0], ch.Curves[1]
		if measured.Class != "curve measured" || theory.Class != "curve" {
			t.Errorf("filter chart curves %q and %q", theory.Class, measured.Class)
		}
		for _, cv := range ch.Curves {
			if cv.Width < 100 || cv.Height < 50 {
				t.Errorf("curve %q is %.0fx%.0f px", cv.Class, cv.Width, cv.Height)
			}
		}
		if measured.Stroke == theory.Stroke || measured.Dash == "none" || measured.Dash == "" {
			t.Errorf("measured curve (stroke %s, dash %q) is not told apart from the theory (stroke %s)", measured.Stroke, measured.Dash, theory.Stroke)
		}
	}

	// The per-host table: one row per host, in the report's order, with the
	// fetched counts of the JSON report.
	hosts := report.Hosts(&c.report)
	if len(r.HostRows) != len(hosts) {
		t.Fatalf("host table has %d rows, want %d", len(r.HostRows), len(hosts))
	}
	for i, h := range hosts {
		row := r.HostRows[i]
		if len(row) < 8 || row[0] != h.Host || row[1] != formatThousands(h.Fetched) || row[2] != formatThousands(h.Unique) {
			t.Errorf("host row %d = %q, want %s fetched %d unique %d", i, row, h.Host, h.Fetched, h.Unique)
		}
	}
	if r.Clusters == 0 {
		t.Error("no duplicate clusters shown")
	}
}

// TestBrowserHostileTitles crawls pages titled <script>alert(1)</script>
// and <img src=x onerror=alert(2)> and checks that the report shows the
// titles as text and runs nothing.
func TestBrowserHostileTitles(t *testing.T) {
	b := needBrowser(t)
	_, seed := smallWeb(t, nil)
	data := filepath.Join(t.TempDir(), "data")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"crawl", "--data", data, "--delay", "0", "--quiet", seed}, &out, &errOut); err != nil {
		t.Fatalf("crawl: %v\n%s", err, errOut.String())
	}
	r := b.load(t, writeHTMLReport(t, data), screenshotPath(t, "hostile-titles.png"), xssScript, xssImg)
	r.assertClean(t)
	for _, text := range []string{xssScript, xssImg} {
		if !r.Texts[text] {
			t.Errorf("the title %s is not visible as text", text)
		}
	}
	if r.Clusters != 2 {
		t.Errorf("%d clusters, want the 2 duplicate pairs", r.Clusters)
	}
}

// formatThousands formats n as the reports do: 1234567 -> 1,234,567.
func formatThousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && s[i-1] != '-' && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
