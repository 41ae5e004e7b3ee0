package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
)

// TestCrawlAddressPolicyAndRobotsCause: with scope any and only loopback
// seeds, redirects to cloud metadata, link-local, private and other loopback
// addresses are refused by the address policy, with or without
// --allow-private-networks for the metadata ones (they were queued and tried:
// the check was switched off when every seed was local); a seed whose
// robots.txt connection is refused is given up at once, and `crawler report`
// says why. Only literal addresses and metadata names are used: nothing is
// resolved and nothing leaves the machine.
func TestCrawlAddressPolicyAndRobotsCause(t *testing.T) {
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.78:0", RobotsAddr: "127.0.0.79:0"})
	if err != nil {
		t.Skip(err)
	}
	defer hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.80:0")
	if err != nil {
		t.Skip(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()

	metadata := []string{"/redirect-metadata", "/redirect-metadata-v6", "/redirect-metadata-name", "/redirect-alibaba", "/redirect-link-local-v6"}
	private := []string{"/redirect-loopback"} // 10.0.0.1 and fd00::1 would be connected to with private networks allowed
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("crawl:\n  scope: any\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, allowPrivate := range []bool{false, true} {
		name := "default"
		if allowPrivate {
			name = "allow-private-networks"
		}
		t.Run(name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := []string{"crawl", "--data", data, "--config", cfgPath, "--delay", "0", "--quiet"}
			paths := append([]string{}, metadata...)
			if allowPrivate {
				args = append(args, "--allow-private-networks")
			} else {
				paths = append(append(paths, private...), "/redirect-private", "/redirect-ula")
			}
			var seeds []string
			for _, p := range paths {
				seeds = append(seeds, hs.URL+p)
			}
			seeds = append(seeds, closed)
			start := time.Now()
			var so, se bytes.Buffer
			if err := run(context.Background(), append(args, seeds...), &so, &se); err != nil {
				t.Fatalf("crawl: %v\n%s", err, se.String())
			}
			if d := time.Since(start); d > 45*time.Second { // waiting out robots_retry would pass 60 s
				t.Errorf("crawl took %v, want seconds (robots_retry is 1m)", d)
			}
			so.Reset()
			if err := run(context.Background(), []string{"report", "--data", data, "--format", "json"}, &so, &se); err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Pages []struct {
					URL, Class, Error string
					Status            int
				} `json:"pages"`
			}
			if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			targets := 0
			for _, p := range rep.Pages {
				switch {
				case strings.HasPrefix(p.URL, hs.URL):
				case p.URL == closed:
					if p.Class != "robots_disallowed" || !strings.Contains(p.Error, "connection refused") {
						t.Errorf("%s: %s %q, want robots_disallowed naming the refused connection", p.URL, p.Class, p.Error)
					}
				default:
					targets++
					if p.Class != "error" || !strings.Contains(p.Error, "address policy") || p.Status != 0 {
						t.Errorf("%s: %s %d %q, want an error refused by the address policy", p.URL, p.Class, p.Status, p.Error)
					}
				}
			}
			if targets != len(paths) {
				t.Errorf("%d redirect targets recorded, want %d", targets, len(paths))
			}
			so.Reset()
			if err := run(context.Background(), []string{"report", "--data", data}, &so, &se); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(so.String(), "robots.txt unavailable, not retried: connect: ") || !strings.Contains(so.String(), "connection refused") {
				t.Errorf("text report does not say why the host was given up:\n%s", so.String())
			}
		})
	}
}
