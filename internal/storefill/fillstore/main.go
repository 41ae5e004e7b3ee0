// Command fillstore makes a big crawl store from a small one (storefill.Fill),
// to measure report and export at scale:
//
//	go run ./internal/storefill/fillstore --src CRAWL-DATA --dst BIG-DATA --pages 200000 [--seed 1]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/storefill"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func main() {
	src := flag.String("src", "", "data dir of a real crawl")
	dst := flag.String("dst", "", "data dir to fill (new)")
	pages := flag.Int("pages", 50000, "page records to write")
	seed := flag.Uint64("seed", 1, "seed of the last copy's subset")
	flag.Parse()
	if err := run(*src, *dst, *pages, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "fillstore:", err)
		os.Exit(1)
	}
}

func run(src, dst string, pages int, seed uint64) error {
	in, err := storage.Open(src, storage.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := storage.Open(dst, storage.Options{})
	if err != nil {
		return err
	}
	start := time.Now()
	n, k, err := storefill.Fill(out, in, pages, seed)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("seed %d: %d page records and %d skip records in %s (%v)\n", seed, n, k, dst, time.Since(start).Round(time.Second))
	return nil
}
