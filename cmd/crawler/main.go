// Command crawler is Horseshoe's command line: crawl, export, report, serve, dedup
// and demo. main only wires: run returns an error, and main maps it to an exit
// code (0 success, 1 runtime failure, 2 usage) with one line on stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/configs"
)

// usageError marks errors caused by how the command was called (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

const usage = `Horseshoe: a polite web crawler that drops exact and near-duplicate pages.

Usage:
  crawler crawl  [--config FILE] [--data DIR] [--seeds FILE] [--serve ADDR] [flags] [URL ...]
  crawler export --data DIR --format jsonl|warc --out PATH [--all] [--main-text|--with-main-text] [--include-duplicates] [--cdx PATH]
  crawler report --data DIR [--format text|json|html] [--out PATH]
  crawler serve  --data DIR [--addr 127.0.0.1:8080]   the HTML report and /metrics over HTTP
  crawler dedup curve [--config FILE] [--filter altavista|bing] [--pairs N]
  crawler demo   [--web DIR] [--data DIR]
  crawler config              print the default configuration
  crawler version

Run 'crawler COMMAND -h' for a command's flags.
`

func main() {
	ctx := context.Background()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	// One line: joined multi-errors (e.g. every invalid config option) are
	// folded with "; ".
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	fmt.Fprintf(stderr, "crawler: %s\n", msg)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

var errHelp = errors.New("help requested")

// run executes one command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command given (run 'crawler help')")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "crawl":
		return cmdCrawl(ctx, rest, stdout, stderr)
	case "export":
		return cmdExport(rest, stdout, stderr)
	case "report":
		return cmdReport(rest, stdout, stderr)
	case "serve":
		return cmdServe(ctx, rest, stdout, stderr)
	case "dedup":
		return cmdDedup(rest, stdout, stderr)
	case "demo":
		return cmdDemo(ctx, rest, stdout, stderr)
	case "config":
		_, err := stdout.Write(configs.DefaultYAML())
		return err
	case "version":
		fmt.Fprintln(stdout, "horseshoe", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return usagef("unknown command %q (run 'crawler help')", cmd)
	}
}
