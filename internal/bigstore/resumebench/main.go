// Command resumebench measures how long a resumed crawl of a big store
// takes from the start of its process to its first request (issue 30). It
// fills a store with bigstore.Fill (once), serves its hosts on loopback
// addresses, and runs each crawler binary given in turn, alternating, on
// the same store: each run is killed (SIGKILL) at its first request, so the
// store stays a crawl killed mid-run.
//
//	go run ./internal/bigstore/resumebench -data /tmp/big -pages 50000 -runs 5 BIN_A BIN_B
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/bigstore"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func main() {
	data := flag.String("data", "", "data dir (filled when it holds no store)")
	pages := flag.Int("pages", 50000, "page records to fill")
	queued := flag.Int("queued", 0, "queue entries to fill (0: as many as pages)")
	hosts := flag.Int("hosts", 50, "hosts (127.0.30.1 ... on -port)")
	port := flag.Int("port", 18730, "port of the hosts")
	runs := flag.Int("runs", 3, "runs of each binary")
	seed := flag.Uint64("seed", 30, "seed of the filled texts and signatures")
	verbose := flag.Bool("v", false, "print each run's log")
	flag.Parse()
	if *data == "" {
		log.Fatal("-data is required")
	}
	if *queued == 0 {
		*queued = *pages
	}
	var hs []string
	for i := range *hosts {
		hs = append(hs, fmt.Sprintf("127.0.30.%d:%d", i+1, *port))
	}
	if _, err := os.Stat(filepath.Join(*data, "MANIFEST")); err != nil {
		t0 := time.Now()
		db, err := storage.Open(*data, storage.Options{})
		if err != nil {
			log.Fatal(err)
		}
		if err := bigstore.Fill(db, bigstore.Options{Pages: *pages, Queued: *queued, Hosts: hs, Seed: *seed}); err != nil {
			log.Fatal(err)
		}
		if err := db.Close(); err != nil {
			log.Fatal(err)
		}
		log.Printf("filled %d pages and %d queue entries in %v", *pages, *queued, time.Since(t0).Round(time.Millisecond))
	}
	first := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case first <- struct{}{}:
		default:
		}
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "<html><body><p>resumed</p></body></html>")
	})
	for _, hp := range hs {
		l, err := net.Listen("tcp", hp)
		if err != nil {
			log.Fatal(err)
		}
		go http.Serve(l, h)
	}
	bins := flag.Args()
	times := make([][]time.Duration, len(bins))
	for run := range *runs {
		for b, bin := range bins {
			select {
			case <-first:
			default:
			}
			cmd := exec.Command(bin, "crawl", "--data", *data, "--quiet")
			if *verbose {
				cmd.Args = cmd.Args[:len(cmd.Args)-1]
			}
			var logs strings.Builder
			cmd.Stderr, cmd.Stdout = &logs, &logs
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				log.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-first:
				d := time.Since(t0)
				times[b] = append(times[b], d)
				cmd.Process.Kill()
				<-exited
				log.Printf("run %d %s: first request after %v", run, bin, d.Round(time.Millisecond))
				if *verbose {
					log.Printf("started %s; its log:\n%s", t0.Format(time.RFC3339Nano), logs.String())
				}
			case err := <-exited:
				log.Fatalf("%s exited before a request: %v\n%s", bin, err, logs.String())
			case <-time.After(10 * time.Minute):
				log.Fatalf("%s: no request in 10 min", bin)
			}
		}
	}
	for b, bin := range bins {
		ts := slices.Clone(times[b])
		slices.Sort(ts)
		fmt.Printf("%s: median %v of %v\n", bin, ts[len(ts)/2].Round(time.Millisecond), ts)
	}
}
