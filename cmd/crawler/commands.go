package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by main
	helpOut[fs] = stderr
	return fs
}

// helpOut remembers where each flag set prints its -h help.
var helpOut = map[*flag.FlagSet]io.Writer{}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if w := helpOut[fs]; w != nil {
				fs.SetOutput(w)
				fs.PrintDefaults()
			}
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// openExisting opens a finished or stopped crawl's store read-only: report,
// export and serve change nothing in the data dir (they work on read-only
// media), and a damaged store opens with what can still be read.
func openExisting(dir string) (*storage.DB, error) {
	if dir == "" {
		return nil, usagef("--data is required")
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, usagef("%s holds no crawl (no Badger MANIFEST)", dir)
	}
	// Reading needs no free space: no guard (a crawl stopped for lack of
	// space must still be reportable).
	return storage.Open(dir, storage.Options{ReadOnly: true, MinFreeBytes: -1})
}

// damageError returns the one-line error for what db found damaged (nil when
// nothing was), with did saying what the command wrote all the same.
func damageError(dir string, db *storage.DB, did string) error {
	ds := db.Damage()
	if len(ds) == 0 {
		return nil
	}
	return &storage.DamageError{Dir: dir, Damages: ds, Note: did}
}

func damageLines(db *storage.DB) []string {
	var out []string
	for _, d := range db.Damage() {
		out = append(out, d.File+": "+d.What)
	}
	return out
}

// output opens path for writing ("-" or "" is stdout).
func output(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot write output: %w", err)
	}
	return f, f.Close, nil
}

func cmdExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stderr)
	data := fs.String("data", "./crawl-data", "data directory of a crawl")
	format := fs.String("format", "jsonl", "jsonl or warc")
	out := fs.String("out", "", "output file (- for stdout)")
	all := fs.Bool("all", false, "jsonl: also write every non-unique page with its class")
	includeDups := fs.Bool("include-duplicates", false, "warc: also write exact duplicates as revisit records and near duplicates as metadata records")
	cdxPath := fs.String("cdx", "", "warc: also write the WARC's CDXJ index (for pywb, OpenWayback) to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out is required")
	}
	if *cdxPath != "" && (*format != "warc" || *out == "-") {
		return usagef("--cdx needs --format warc and an --out file (the index names it)")
	}
	switch *format {
	case "jsonl", "warc":
	default:
		return usagef("--format must be jsonl or warc, got %q", *format)
	}
	db, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer db.Close()
	w, closeOut, err := output(*out, stdout)
	if err != nil {
		return err
	}
	var n, damaged int
	if *format == "warc" {
		n, err = exportWARC(db, w, *includeDups, func(*storage.Page) { damaged++ }, *cdxPath, filepath.Base(*out))
	} else {
		n, err = export.JSONL(w, db, export.JSONLOptions{All: *all})
		damaged = db.Unreadable()["page texts"]
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	did := fmt.Sprintf("exported what could be read: %d records to %s", n, *out)
	switch {
	case damaged > 0 && *format == "warc":
		did += fmt.Sprintf("; %d pages whose raw exchange is unreadable were left out (a duplicate's as a metadata record)", damaged)
	case damaged > 0:
		did += fmt.Sprintf(", %d of them flagged \"damaged\": true with their text lost", damaged)
	}
	if err := damageError(*data, db, did); err != nil {
		return err // the one line says what was written
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %d records to %s\n", n, *out)
	}
	return nil
}

func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stderr)
	data := fs.String("data", "./crawl-data", "data directory of a crawl")
	format := fs.String("format", "text", "text, json or html")
	out := fs.String("out", "", "output file (default stdout)")
	cfgPath := fs.String("config", "", "config file the crawl used (for the filter curve)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var write func(io.Writer, *report.Data) error
	switch *format {
	case "text":
		write = report.WriteText
	case "json":
		write = report.WriteJSON
	case "html":
		write = report.WriteHTML
	default:
		return usagef("--format must be text, json or html, got %q", *format)
	}
	cfg, err := configs.Load(*cfgPath)
	if err != nil {
		return usageError{err}
	}
	db, err := openExisting(*data)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := writeReport(db, cfg, write, *out, stdout); err != nil {
		return err
	}
	return damageError(*data, db, "the report shows what could be read")
}

func writeReport(db *storage.DB, cfg configs.Config, write func(io.Writer, *report.Data) error, out string, stdout io.Writer) error {
	name, curve, err := filterCurve(cfg)
	if err != nil {
		return err
	}
	d, err := crawl.ReportData(db, name, curve)
	if err != nil {
		return fmt.Errorf("cannot read crawl: %w", err)
	}
	if d.EndToEnd, err = endToEndCurve(cfg); err != nil {
		return err
	}
	d.Damage = damageLines(db)
	w, closeOut, err := output(out, stdout)
	if err != nil {
		return err
	}
	err = write(w, d)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return err
}

// filterCurve returns the configured supershingle filter's description and
// its match probability at J = 0.50, 0.51, ..., 1.00.
func filterCurve(cfg configs.Config) (string, []report.CurvePoint, error) {
	o := crawl.DedupOptions(cfg.Dedup)
	det, err := dedup.New(o)
	if err != nil {
		return "", nil, usageError{err}
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
	k, s, r, bits := filterParams(cfg.Dedup)
	return crawl.FilterName(cfg.Dedup.Filter, k, s, r, bits), pts, nil
}

// End-to-end curve of the report: the Jaccard values, the pairs per value
// (a standard error of at most 0.035 per point) and the fixed seed that keeps
// the report deterministic. About 0.5 s.
const (
	reportCurvePairs = 200
	curveSeed        = 1
)

func reportCurveJaccards() []float64 {
	return []float64{0.5, 0.7, 0.8, 0.85, 0.88, 0.9, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 1}
}

// measuredCurve runs dedup.EndToEndCurve for cfg's detector.
func measuredCurve(cfg configs.Config, js []float64, pairs int) ([]dedup.EndToEndPoint, error) {
	pts, err := dedup.EndToEndCurve(crawl.DedupOptions(cfg.Dedup), js, pairs, curveSeed)
	if err != nil {
		return nil, usageError{err}
	}
	return pts, nil
}

// endToEndCurve returns the share of page pairs at each Jaccard that the
// crawl's detector drops, measured on constructed pairs (dedup.EndToEndCurve):
// with exact settlement, or by the sketch rule when url_tokens is on (the
// crawl cannot settle then: its tokens hold URLs the stored text lacks).
func endToEndCurve(cfg configs.Config) ([]report.CurvePoint, error) {
	pts, err := measuredCurve(cfg, reportCurveJaccards(), reportCurvePairs)
	if err != nil {
		return nil, err
	}
	out := make([]report.CurvePoint, len(pts))
	for i, p := range pts {
		out[i] = report.CurvePoint{Jaccard: p.J, Probability: p.Settled}
		if cfg.Dedup.URLTokens {
			out[i].Probability = p.Sketch
		}
	}
	return out, nil
}

func filterParams(d configs.Dedup) (k, s, r, bits int) {
	switch d.Filter {
	case "altavista":
		return 6, 14, 2, 64
	case "bing":
		return 6, 5, 4, 16
	}
	return d.FilterK, d.FilterS, d.FilterR, d.FilterBits
}

func cmdDedup(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "curve" {
		return usagef("usage: crawler dedup curve [--config FILE]")
	}
	fs := newFlagSet("dedup curve", stderr)
	cfgPath := fs.String("config", "", "config file")
	filter := fs.String("filter", "", "override dedup.filter (altavista, bing)")
	pairs := fs.Int("pairs", 400, "page pairs per Jaccard value for the measured columns")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *pairs < 1 || *pairs > 100000 {
		return usagef("--pairs must be 1 to 100000, got %d", *pairs)
	}
	cfg, err := configs.Load(*cfgPath)
	if err != nil {
		return usageError{err}
	}
	if *filter != "" {
		cfg.Dedup.Filter = *filter
		if err := cfg.Validate(); err != nil {
			return usageError{err}
		}
	}
	name, _, err := filterCurve(cfg)
	if err != nil {
		return err
	}
	det, err := dedup.New(crawl.DedupOptions(cfg.Dedup))
	if err != nil {
		return usageError{err}
	}
	js := []float64{0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 1}
	pts, err := measuredCurve(cfg, js, *pairs)
	if err != nil {
		return err
	}
	o := det.Options()
	fmt.Fprintf(stdout, "P(match | Jaccard) for %s\n\n", name)
	fmt.Fprintf(stdout, "  theory:  the filter's P(k,s,r)(J): the pair becomes a supershingle candidate\n")
	fmt.Fprintf(stdout, "  settled: dropped end to end by the crawl's rule: candidates from the filter and simhash,\n")
	fmt.Fprintf(stdout, "           one with at least %d of %d equal samples decided on its exact Jaccard (>= %g)\n", det.SettleFloor(), o.Samples, o.Threshold)
	fmt.Fprintf(stdout, "  sketch:  dropped by the sketch rule alone (estimated Jaccard >= %g)\n", o.Threshold)
	fmt.Fprintf(stdout, "  measured on %d page pairs per row at exactly that Jaccard of their %d-word looped shingles\n", *pairs, o.ShingleWords)
	if cfg.Dedup.URLTokens {
		fmt.Fprintf(stdout, "  with url_tokens the crawl cannot settle (the stored text lacks the URL tokens): it uses the sketch rule\n")
	}
	fmt.Fprintf(stdout, "\n  Jaccard    theory   settled    sketch\n")
	for _, p := range pts {
		bar := strings.Repeat("#", int(p.Settled*40+0.5))
		line := fmt.Sprintf("  %7.3f  %8.4f  %8.4f  %8.4f  %s", p.J, p.Theory, p.Settled, p.Sketch, bar)
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
	}
	return nil
}

// cmdDemo serves the demo web shipped in testdata/demo on loopback, crawls it
// and prints the report.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	web := fs.String("web", "testdata/demo", "demo web directory (one sub-directory per loopback IP, SEEDS.txt)")
	data := fs.String("data", "", "data directory (default: a new temporary directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return runDemo(ctx, *web, *data, stdout, stderr)
}

func runDemo(ctx context.Context, webDir, dataDir string, stdout, stderr io.Writer) error {
	seedLines, err := os.ReadFile(filepath.Join(webDir, "SEEDS.txt"))
	if err != nil {
		return usagef("demo web not found: %v (run from the repository root or pass --web)", err)
	}
	w, err := testweb.Start(webDir, testweb.Options{})
	if err != nil {
		return fmt.Errorf("cannot serve the demo web: %w", err)
	}
	defer w.Close()
	var raw []string
	for _, line := range strings.Split(string(seedLines), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			raw = append(raw, w.URL(f[0], f[1]))
		}
	}
	seeds, err := canonicalSeeds(raw, configs.Default().URLs.MaxLength)
	if err != nil {
		return err
	}
	if dataDir == "" {
		dataDir, err = os.MkdirTemp("", "horseshoe-demo-")
		if err != nil {
			return err
		}
	}
	cfg := configs.Default()
	cfg.Politeness.Delay = configs.Duration(50 * time.Millisecond)
	fmt.Fprintf(stdout, "Serving the demo web on %s\nCrawling %d seeds politely (one request at a time per host)...\n\n",
		strings.Join(w.Hosts(), ", "), len(seeds))
	if err := runCrawl(ctx, cfg, dataDir, seeds, false, newLogger(stderr, true), stdout, nil); err != nil {
		return err
	}
	db, err := storage.Open(dataDir, storage.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(stdout)
	if err := writeReport(db, cfg, report.WriteText, "", stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe crawl is in %s. Try:\n  crawler report --data %s --format html --out report.html\n  crawler export --data %s --format jsonl --out pages.jsonl\n",
		dataDir, dataDir, dataDir)
	return nil
}
