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
	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
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

// parseFlags parses a command's flags; it takes no other arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseFlagArgs parses flags followed by arguments (fs.Args).
func parseFlagArgs(fs *flag.FlagSet, args []string) error {
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
	return nil
}

func cmdExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stderr)
	var dirs dataDirs
	fs.Var(&dirs, "data", "data directory of a crawl (default ./crawl-data); given more than once, the workers' dirs of one shared crawl, exported one after the other")
	format := fs.String("format", "jsonl", "jsonl or warc")
	out := fs.String("out", "", "output file (- for stdout)")
	all := fs.Bool("all", false, "jsonl: also write every non-unique page with its class")
	mainText := fs.Bool("main-text", false, "jsonl: text holds the main text (the article, without navigation, headers and footers) instead of all visible text")
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
	if len(dirs) > 1 {
		if *cdxPath != "" {
			return usagef("--cdx takes one --data dir")
		}
		n, err := mergedExport(dirs, *format, *out, export.JSONLOptions{All: *all, MainTextInText: *mainText},
			export.WARCOptions{IncludeDuplicates: *includeDups, Software: "Horseshoe/" + version}, stdout)
		if err != nil {
			return asUsage(err)
		}
		if *out != "-" {
			fmt.Fprintf(stderr, "wrote %d records from %d data dirs to %s\n", n, len(dirs), *out)
		}
		return nil
	}
	data := &dirs.or("./crawl-data")[0]
	db, err := session.OpenExisting(*data)
	if err != nil {
		return asUsage(err)
	}
	defer db.Close()
	w, closeOut, err := console.Output(*out, stdout)
	if err != nil {
		return err
	}
	var n, damaged, noMainText int
	if *format == "warc" {
		n, err = session.ExportWARC(db, w, export.WARCOptions{IncludeDuplicates: *includeDups, Software: "Horseshoe/" + version,
			Damaged: func(*storage.Page) { damaged++ }, Filename: filepath.Base(*out)}, *cdxPath)
	} else {
		n, err = export.JSONL(w, db, export.JSONLOptions{All: *all, MainTextInText: *mainText,
			MainTextFailed: func(*storage.Page, error) { noMainText++ }})
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
	if err := session.DamageError(*data, db, did); err != nil {
		return err // the one line says what was written
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %d records to %s\n", n, *out)
	}
	if noMainText > 0 {
		fmt.Fprintf(stderr, "%d pages have no main text: their raw response was not kept (storage.keep_raw) or is unreadable, or the page is too large for extraction\n", noMainText)
	}
	return nil
}

func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stderr)
	var dirs dataDirs
	fs.Var(&dirs, "data", "data directory of a crawl (default ./crawl-data); given more than once, the workers' dirs of one shared crawl, merged")
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
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if len(dirs) > 1 {
		d, err := mergedReport(dirs, cfg)
		if err != nil {
			return asUsage(err)
		}
		w, closeOut, err := console.Output(*out, stdout)
		if err != nil {
			return err
		}
		err = write(w, d)
		if cerr := closeOut(); err == nil {
			err = cerr
		}
		return err
	}
	data := &dirs.or("./crawl-data")[0]
	db, err := session.OpenExisting(*data)
	if err != nil {
		return asUsage(err)
	}
	defer db.Close()
	if err := writeReport(db, cfg, write, *out, stdout); err != nil {
		return err
	}
	return session.DamageError(*data, db, "the report shows what could be read")
}

func writeReport(db *storage.DB, cfg configs.Config, write func(io.Writer, *report.Data) error, out string, stdout io.Writer) error {
	d, err := crawl.Report(db, cfg.Dedup)
	if err != nil {
		return asUsage(err)
	}
	w, closeOut, err := console.Output(out, stdout)
	if err != nil {
		return err
	}
	err = write(w, d)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return err
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
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *filter != "" {
		cfg.Dedup.Filter = *filter
		if err := crawl.Validate(cfg); err != nil {
			return usageError{err}
		}
	}
	return asUsage(console.DedupCurve(stdout, cfg.Dedup, *pairs))
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
	w, raw, err := testweb.StartDemo(webDir)
	var nd *testweb.NoDemoError
	if errors.As(err, &nd) {
		return usagef("demo web not found: %v (run from the repository root or pass --web)", nd.Err)
	}
	if err != nil {
		return err
	}
	defer w.Close()
	seeds, err := session.CanonicalSeeds(raw, configs.Default().URLs.MaxLength)
	if err != nil {
		return asUsage(err)
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
	if err := (crawlRun{logger: console.NewLogger(stderr, true), stdout: stdout}).crawl(ctx, cfg, dataDir, seeds); err != nil {
		return asUsage(err)
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
