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
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
)

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by main
	helpOut.Store(fs, stderr)
	return fs
}

// helpOut remembers where each flag set prints its -h help
// (*flag.FlagSet -> io.Writer; commands may run at once, as the shared-crawl
// tests' workers do).
var helpOut sync.Map

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
			if w, ok := helpOut.Load(fs); ok {
				fs.SetOutput(w.(io.Writer))
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
	withMainText := fs.Bool("with-main-text", false, "jsonl: also write main_text, the main text, beside the whole visible text (extraction costs about 1 ms a page)")
	includeDups := fs.Bool("include-duplicates", false, "warc: also write exact duplicates as revisit records and near duplicates as metadata records")
	cdxPath := fs.String("cdx", "", "warc: also write the WARC's CDXJ index (for pywb, OpenWayback) to this file")
	var sf sharedFlags
	sf.add(fs, "the data dirs its workers registered (those on this machine)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, err := sf.findDirs(&dirs, stderr); err != nil {
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
		var n int
		err := writeOut(*out, stdout, func(w io.Writer) (err error) {
			n, err = session.MergedExport(w, dirs, *format, filepath.Base(*out), export.JSONLOptions{All: *all, MainText: *withMainText, MainTextInText: *mainText},
				export.WARCOptions{IncludeDuplicates: *includeDups, Software: "Horseshoe/" + version})
			return err
		})
		if err != nil {
			return asUsage(err)
		}
		if *out != "-" {
			fmt.Fprintf(stderr, "wrote %d records from %d data dirs to %s\n", n, len(dirs), *out)
		}
		return nil
	}
	n, noMainText, err := session.ExportDir(dirs.or("./crawl-data")[0], func() (io.Writer, func() error, error) {
		return console.Output(*out, stdout)
	}, session.ExportOptions{Format: *format, Out: *out, CDX: *cdxPath,
		JSONL: export.JSONLOptions{All: *all, MainText: *withMainText, MainTextInText: *mainText},
		WARC:  export.WARCOptions{IncludeDuplicates: *includeDups, Software: "Horseshoe/" + version}})
	if err != nil {
		return asUsage(err)
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %d records to %s\n", n, *out)
	}
	if noMainText.Total() > 0 {
		fmt.Fprintln(stderr, noMainText)
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
	var sf sharedFlags
	sf.add(fs, "the data dirs its workers registered (those on this machine)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	workers, err := sf.findDirs(&dirs, stderr)
	if err != nil {
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
	emit := func(d *report.Data) error {
		if workers != nil {
			d.Workers = workers // Redis's records: the dead and live workers too
		}
		return writeOut(*out, stdout, func(w io.Writer) error { return write(w, d) })
	}
	if len(dirs) > 1 {
		d, err := session.MergedReport(dirs, cfg)
		if err != nil {
			return asUsage(err)
		}
		return emit(d)
	}
	return asUsage(session.ReportDir(dirs.or("./crawl-data")[0], cfg, emit))
}

// writeOut writes to out (console.Output: a file, or stdout for "" and "-").
func writeOut(out string, stdout io.Writer, fn func(io.Writer) error) error {
	w, closeOut, err := console.Output(out, stdout)
	if err != nil {
		return err
	}
	err = fn(w)
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
	w, raw, err := loopweb.StartDemo(webDir)
	var nd *loopweb.NoDemoError
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
	if err := (crawlRun{logger: console.NewLogger(stderr, true), stdout: stdout}).crawl(ctx, cfg, dataDir, seeds, sharedFlags{}); err != nil {
		return asUsage(err)
	}
	fmt.Fprintln(stdout)
	if err := asUsage(session.ReportDir(dataDir, cfg, func(d *report.Data) error { return report.WriteText(stdout, d) })); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe crawl is in %s. Try:\n  crawler report --data %s --format html --out report.html\n  crawler export --data %s --format jsonl --out pages.jsonl\n",
		dataDir, dataDir, dataDir)
	return nil
}

// dataDirs is a --data flag given once or more: the data dirs of the workers
// of one shared crawl (each holds the pages it fetched).
type dataDirs []string

func (d *dataDirs) String() string { return strings.Join(*d, ",") }
func (d *dataDirs) Set(s string) error {
	*d = append(*d, s)
	return nil
}

// add defines --redis, --crawl and --redis-ca on fs, reading what of the
// shared crawl.
func (sf *sharedFlags) add(fs *flag.FlagSet, what string) {
	fs.StringVar(&sf.redis, "redis", "", "with --crawl: read "+what+", from Redis: redis://[:PASSWORD@]HOST:PORT/DB or rediss://")
	fs.StringVar(&sf.name, "crawl", "", "with --redis: the name of the shared crawl")
	fs.StringVar(&sf.ca, "redis-ca", "", "with a rediss:// URL: PEM file of the certificates to trust (default: the system's)")
}

// findDirs sets dirs to the data dirs the shared crawl's workers registered
// in Redis (with --redis), says on w which it reads and which it cannot, and
// returns the workers' records (nil without --redis).
func (sf sharedFlags) findDirs(dirs *dataDirs, w io.Writer) (*report.Workers, error) {
	if sf.redis == "" {
		if sf.name != "" {
			return nil, usagef("--crawl needs --redis URL")
		}
		return nil, nil
	}
	if len(*dirs) > 0 {
		return nil, usagef("give --data dirs or --redis and --crawl (which find them), not both")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := session.FindDataDirs(ctx, session.SharedOptions{Redis: sf.redis, Name: sf.name, CAFile: sf.ca})
	for _, d := range found.Elsewhere {
		fmt.Fprintf(w, "cannot read the data dir %s: its pages are left out\n", d)
	}
	if err != nil {
		return nil, asUsage(err)
	}
	fmt.Fprintf(w, "crawl %q: reading %d data dirs found through Redis: %s\n", sf.name, len(found.Local), strings.Join(found.Local, ", "))
	*dirs = found.Local
	return found.Workers, nil
}

// or returns the dirs given, or def when none was.
func (d dataDirs) or(def string) []string {
	if len(d) == 0 {
		return []string{def}
	}
	return d
}
