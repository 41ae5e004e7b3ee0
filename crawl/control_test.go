package crawl_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// mapResolver answers from a map (a table test of the address rule).
type mapResolver map[string]string

func (m mapResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if ip, ok := m[host]; ok {
		return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestCheckSeeds: a seed added while running is refused when the address
// policy refuses its host, literal or resolved (so it is never stored, to
// be allowed as a start seed on resume), when crawl.deny excludes it, or
// when it is a trap; --allow-private-networks lets private addresses
// through, never metadata ones.
func TestCheckSeeds(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := configs.Default()
	cfg.Crawl.Deny = []string{`/private/`}
	res := mapResolver{"internal.test": "10.0.0.7", "meta.test": "169.254.169.254", "public.test": "93.184.216.34"}
	for _, allowPrivate := range []bool{false, true} {
		policy := fetch.AddrPolicy{AllowPrivate: allowPrivate}
		c, err := crawl.Build(cfg, db, crawl.Env{Seeds: []string{"http://public.test/"}, Policy: &policy, Resolver: res}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cases := map[string]bool{ // seed: accepted
			"http://public.test/b":                           true,
			"http://unknown.test/":                           true, // fails when fetched
			"http://internal.test/":                          allowPrivate,
			"http://10.0.0.1/":                               allowPrivate,
			"http://meta.test/":                              false,
			"http://169.254.169.254/latest/":                 false,
			"http://metadata.google.internal/":               false,
			"http://public.test/private/x":                   false,
			"http://public.test/" + strings.Repeat("a/", 40): false,
		}
		for seed, ok := range cases {
			err := c.CheckSeeds([]string{"http://public.test/", seed})
			var se *crawl.SeedError
			if (err == nil) != ok || err != nil && (!errors.As(err, &se) || !strings.Contains(err.Error(), seed)) {
				t.Errorf("private %v, %s: %v, want accepted %v (a *SeedError naming it)", allowPrivate, seed, err, ok)
			}
		}
		c.Close()
	}
}
