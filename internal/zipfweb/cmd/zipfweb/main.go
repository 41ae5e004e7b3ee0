// Command zipfweb serves issue 30's scale web (package zipfweb) until it is
// interrupted. It prints the seed, the port and the path of a file of seed
// URLs (the hosts' index pages), one a line, then "ready":
//
//	go run ./internal/zipfweb/cmd/zipfweb -pages 100000 -hosts 250 -seed 1 -seeds /tmp/seeds
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/zipfweb"
)

func main() {
	pages := flag.Int("pages", 10000, "pages in all")
	hosts := flag.Int("hosts", 250, "hosts (127.40.0.1, ...)")
	seed := flag.Uint64("seed", 0, "seed of the generator (0: from the clock)")
	port := flag.Int("port", 0, "port of every host (0: a free one)")
	seeds := flag.String("seeds", "", "write the seed URLs to this file (default: a temporary file)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	// The pages are garbage as soon as they are written: a larger heap
	// target spends less of the machine on the collector.
	debug.SetGCPercent(400)
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	s, err := zipfweb.Listen(zipfweb.Options{Pages: *pages, Hosts: *hosts, Seed: *seed, Port: *port})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	path := *seeds
	if path == "" {
		f, err := os.CreateTemp("", "zipfweb-seeds-*")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		f.Close()
		path = f.Name()
	}
	if err := os.WriteFile(path, []byte(strings.Join(s.Web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	o := s.Web.Options()
	fmt.Printf("seed %d\nport %d\npages %d\nhosts %d\nseeds %s\nready\n", o.Seed, o.Port, o.Pages, o.Hosts, path)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	reqs, served := s.Requests()
	fmt.Fprintf(os.Stderr, "requests %d pages %d\n", reqs, served)
	s.Close()
}
