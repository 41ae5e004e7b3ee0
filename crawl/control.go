package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// SeedError is why seeds given to a running crawl are refused.
type SeedError struct{ Err error }

func (e *SeedError) Error() string { return e.Err.Error() }
func (e *SeedError) Unwrap() error { return e.Err }

// CheckSeeds returns a *SeedError naming every seed (canonical) that
// AddSeeds would refuse: a trap (urls.*), one that crawl.allow or crawl.deny
// exclude, or a host the address policy
// refuses without a lookup (a private or metadata IP literal, a metadata
// name). A seed added while the crawl runs does not widen the address
// policy as seeds given at the start do: a name resolving to a private
// address is refused when connecting, unless --allow-private-networks or
// fetch.allow_addresses let it through.
func (c *Crawl) CheckSeeds(seeds []string) error {
	var errs []error
	for _, s := range seeds {
		if err := frontier.CheckTrap(s, c.Engine.o.Trap); err != nil {
			errs = append(errs, fmt.Errorf("seed %s: %w", s, err))
			continue
		}
		if c.Scope != nil && c.Scope.Excluded(s) {
			errs = append(errs, fmt.Errorf("seed %s is excluded by crawl.allow or crawl.deny", s))
			continue
		}
		u, err := url.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %s: %w", s, err))
			continue
		}
		if err := c.checkAddresses(u.Hostname()); err != nil {
			errs = append(errs, fmt.Errorf("seed %s: refused by the address policy: %w", s, err))
		}
	}
	if len(errs) > 0 {
		return &SeedError{errors.Join(errs...)}
	}
	return nil
}

// AddSeeds adds seeds (canonical, checked by CheckSeeds) to the running
// crawl as seeds given at its start are: the scope widens to admit them,
// and those not seen before are queued at depth 0. A seed CheckSeeds
// refuses is a *SeedError, and nothing is added.
// It returns how many were queued.
func (c *Crawl) AddSeeds(seeds []string) (int, error) {
	if err := c.CheckSeeds(seeds); err != nil {
		return 0, err
	}
	if c.Scope != nil {
		if err := c.Scope.Widen(seeds); err != nil {
			return 0, &SeedError{err}
		}
	}
	return c.Engine.Seed(seeds)
}

// checkAddresses checks host (no port) by the fetcher's address policy: an
// IP literal or a metadata name as it is, a name by the addresses it
// resolves to.
func (c *Crawl) checkAddresses(host string) error {
	if err := c.Fetcher.CheckHost(host); err != nil {
		return err
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return nil // a literal: judged
	}
	var r Resolver = net.DefaultResolver
	if c.Engine.o.Resolver != nil {
		r = c.Engine.o.Resolver
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := c.Fetcher.CheckHost(a.IP.String()); err != nil {
			return fmt.Errorf("%s resolves to %s: %w", host, a.IP, err)
		}
	}
	return nil
}
