package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it; tests inject a fake
// so that no lookup leaves the machine.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// LimitLookups returns r with at most n lookups in flight at once (n < 1: 1); a lookup waits for
// a slot as long as its ctx allows. One of them shared by every part of a crawl that resolves names
// (the fetcher's dialer and proxy check, the politeness lookups) bounds the crawl's lookups as a
// whole.
func LimitLookups(r Resolver, n int) Resolver {
	return &limitedResolver{r: r, slots: make(chan struct{}, max(n, 1))}
}

type limitedResolver struct {
	r     Resolver
	slots chan struct{}
}

func (l *limitedResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &net.DNSError{Err: ctx.Err().Error(), Name: host, IsTimeout: errors.Is(ctx.Err(), context.DeadlineExceeded), UnwrapErr: ctx.Err()}
	}
	defer func() { <-l.slots }()
	return l.r.LookupIPAddr(ctx, host)
}

// ErrMetadataAddress is the cause when an address or name of a cloud metadata service, or a
// link-local address, is refused. errors.Is(err, ErrPrivateAddress) holds for it too.
var ErrMetadataAddress = fmt.Errorf("link-local or cloud metadata address: %w", ErrPrivateAddress)

// PolicyError is an address or name the policy refuses. It unwraps to ErrMetadataAddress or
// ErrPrivateAddress.
type PolicyError struct {
	Host     string // the name that resolved to Addr, or the metadata name; "" for a literal
	Addr     string // the refused address; "" for a metadata name refused before any lookup
	Metadata bool   // link-local or cloud metadata (else private)
}

func (e *PolicyError) Error() string {
	kind := "a private address"
	if e.Metadata {
		kind = "a link-local or cloud metadata address"
	}
	switch {
	case e.Addr == "":
		return e.Host + " names " + kind
	case e.Host != "":
		return e.Host + " resolves to " + e.Addr + ", " + kind
	}
	return e.Addr + " is " + kind
}

func (e *PolicyError) Unwrap() error {
	if e.Metadata {
		return ErrMetadataAddress
	}
	return ErrPrivateAddress
}

// AddrPolicy says which addresses a Fetcher with DenyPrivate may connect to. Public addresses are
// always allowed, with the exception of the metadata services below. The zero value allows public
// addresses only.
//
// Three kinds of address are told apart:
//   - public: globally routable unicast (IsPublicAddr), minus the metadata addresses;
//   - private: loopback, RFC 1918, unique-local fc00::/7, CGNAT, documentation, reserved;
//     allowed with AllowPrivate;
//   - link-local and metadata: 169.254.0.0/16 (169.254.169.254 serves the metadata of AWS, GCP,
//     Azure, OpenStack and most other clouds), fe80::/10, fd00:ec2::254 (AWS IPv6), fd20:ce::254
//     (GCP IPv6), 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle), 168.63.129.16 (Azure
//     WireServer), and the names in MetadataNames; never allowed by AllowPrivate, only when listed
//     in Allow or AllowHosts.
type AddrPolicy struct {
	AllowPrivate bool           // private addresses (not link-local or metadata) are allowed
	Allow        []netip.Prefix // addresses allowed whatever their kind (a crawl's seeds' own addresses)
	AllowHosts   []string       // host names whose every address is allowed (named explicitly)
}

// MetadataNames are host names of cloud metadata services, refused before any lookup unless named
// in AddrPolicy.AllowHosts.
var MetadataNames = []string{
	"metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal",
	"instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com",
	"metadata.platformequinix.com", "metadata.packet.net",
}

var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd20:ce::254"),    // GCP metadata over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (legacy)
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (public range, reachable only in Azure)
}

// IPv6 ranges that embed an IPv4 address, which is what they reach.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // NAT64 (RFC 6052): the last 32 bits
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (RFC 2765): the last 32 bits
	compatible = netip.MustParsePrefix("::/96")           // IPv4-compatible (RFC 4291, deprecated): the last 32 bits
	sixToFour  = netip.MustParsePrefix("2002::/16")       // 6to4 (RFC 3056): bits 16-47
	teredo     = netip.MustParsePrefix("2001::/32")       // Teredo (RFC 4380): an obfuscated client address
	teredoAddr = netip.AddrFrom4([4]byte{192, 0, 0, 170}) // stands for Teredo: judged private (RFC 7335's range)
)

// normalAddr unmaps IPv4-mapped addresses, takes the IPv4 address out of the IPv6 forms that
// embed one (NAT64, IPv4-translated, IPv4-compatible, 6to4) and drops the zone, so that an
// address is judged by what it reaches. A Teredo address, whose client address is obfuscated,
// is judged as a private one.
func normalAddr(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), translated.Contains(a),
		compatible.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case teredo.Contains(a):
		return teredoAddr
	}
	return a
}

// IsMetadataAddr reports whether a is link-local or the address of a cloud metadata service.
func IsMetadataAddr(a netip.Addr) bool {
	a = normalAddr(a)
	return a.IsLinkLocalUnicast() || slices.Contains(metadataAddrs, a)
}

// IsMetadataName reports whether host (a name, any case, with or without the trailing dot) names a
// cloud metadata service.
func IsMetadataName(host string) bool {
	return slices.Contains(MetadataNames, normalHost(host))
}

func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// CheckAddr returns nil when a may be connected to, else an error wrapping ErrPrivateAddress (and
// ErrMetadataAddress for link-local and metadata addresses).
func (p *AddrPolicy) CheckAddr(a netip.Addr) error {
	n := normalAddr(a)
	for _, pr := range p.Allow {
		if pr.Contains(n) || pr.Contains(a) {
			return nil
		}
	}
	switch {
	case IsMetadataAddr(n):
		return &PolicyError{Addr: a.String(), Metadata: true}
	case IsPublicAddr(n):
		return nil
	case p.AllowPrivate:
		return nil
	}
	return &PolicyError{Addr: a.String()}
}

// hostAllowed reports whether host is named in AllowHosts.
func (p *AddrPolicy) hostAllowed(host string) bool {
	h := normalHost(host)
	for _, a := range p.AllowHosts {
		if normalHost(a) == h {
			return true
		}
	}
	return false
}

// CheckHost judges a URL's host (name or IP literal, with or without a port) without any lookup:
// an IP literal by CheckAddr, a metadata name as refused unless named in AllowHosts. nil means
// "not refused yet": the addresses a name resolves to are checked when connecting.
func (p *AddrPolicy) CheckHost(hostport string) error {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = normalHost(h)
	if p.hostAllowed(h) {
		return nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return p.CheckAddr(a)
	}
	if IsMetadataName(h) {
		return &PolicyError{Host: h, Metadata: true}
	}
	return nil
}

// dialFunc connects to a literal address.
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// policyDialer resolves names itself and checks every address against the policy before it
// connects to it, so a name that resolves to a refused address (DNS rebinding included) is caught
// with no packet sent to that address: the address checked is the address dialled.
type policyDialer struct {
	policy   *AddrPolicy // nil: any address
	resolver Resolver
	dial     dialFunc
	proxies  []string // host:port of the configured proxies, connected to without the policy
}

func (d *policyDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	if slices.ContainsFunc(d.proxies, func(p string) bool { return strings.EqualFold(p, address) }) {
		return d.dial(ctx, network, address) // the user named the proxy: its address is not judged
	}
	refuse := func(err error) error {
		return &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("refused by the address policy: %w", err)}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if d.policy != nil {
			if err := d.policy.CheckAddr(a); err != nil {
				return nil, refuse(err)
			}
		}
		return d.dial(ctx, network, address)
	}
	named := d.policy == nil || d.policy.hostAllowed(host)
	if !named && IsMetadataName(host) {
		return nil, refuse(&PolicyError{Host: normalHost(host), Metadata: true})
	}
	addrs, err := d.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	if len(addrs) == 0 {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}
	var refused, failed error
	for _, ia := range addrs {
		a, ok := netip.AddrFromSlice(ia.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if !named {
			if err := d.policy.CheckAddr(a); err != nil {
				if pe, ok := err.(*PolicyError); ok && refused == nil {
					pe.Host = host
					refused = pe
				}
				continue
			}
		}
		target := a.String()
		if ia.Zone != "" {
			target += "%" + ia.Zone
		}
		conn, err := d.dial(ctx, network, net.JoinHostPort(target, port))
		if err == nil {
			return conn, nil
		}
		if failed == nil {
			failed = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed != nil {
		return nil, failed
	}
	if refused != nil {
		return nil, refuse(refused)
	}
	return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no usable address for " + host)}
}

// CheckHost judges a URL's host by the fetcher's address policy without any lookup (see
// AddrPolicy.CheckHost); it is nil when DenyPrivate is off.
func (f *Fetcher) CheckHost(host string) error {
	if !f.opts.DenyPrivate {
		return nil
	}
	return f.opts.Policy.CheckHost(host)
}

// AllowEntries adds entries (IP addresses, CIDR prefixes or host names, as in the fetch.allow_addresses
// setting) to the policy's Allow and AllowHosts.
func (p *AddrPolicy) AllowEntries(entries []string) error {
	var errs []error
	for _, e := range entries {
		if a, err := netip.ParseAddr(e); err == nil {
			p.Allow = append(p.Allow, netip.PrefixFrom(normalAddr(a), normalAddr(a).BitLen()))
			continue
		}
		if pr, err := netip.ParsePrefix(e); err == nil {
			p.Allow = append(p.Allow, pr.Masked())
			continue
		}
		if !validHostName(e) {
			errs = append(errs, fmt.Errorf("allow %q: not an IP address, a CIDR prefix or a host name", e))
			continue
		}
		p.AllowHosts = append(p.AllowHosts, normalHost(e))
	}
	return errors.Join(errs...)
}

// AllowSeeds lets the policy through to the seeds' own addresses, and nothing more: a seed whose
// host is a non-public IP literal allows that address; a seed named by a metadata name allows
// that name; any other name is resolved (with r, within ctx) and its non-public addresses are
// allowed. It returns the addresses and names it added. A seed that does not resolve adds nothing.
func (p *AddrPolicy) AllowSeeds(ctx context.Context, r Resolver, hosts []string) []string {
	var added []string
	allow := func(a netip.Addr) {
		a = normalAddr(a)
		pr := netip.PrefixFrom(a, a.BitLen())
		if (IsPublicAddr(a) && !IsMetadataAddr(a)) || slices.Contains(p.Allow, pr) {
			return
		}
		p.Allow = append(p.Allow, pr)
		added = append(added, a.String())
	}
	for _, hp := range hosts {
		h := hp
		if hh, _, err := net.SplitHostPort(hp); err == nil {
			h = hh
		}
		h = normalHost(h)
		if a, err := netip.ParseAddr(h); err == nil {
			allow(a)
			continue
		}
		if IsMetadataName(h) {
			if !p.hostAllowed(h) {
				p.AllowHosts = append(p.AllowHosts, h)
				added = append(added, h)
			}
			continue
		}
		if r == nil {
			continue
		}
		addrs, err := r.LookupIPAddr(ctx, h)
		if err != nil {
			continue
		}
		for _, ia := range addrs {
			if a, ok := netip.AddrFromSlice(ia.IP); ok {
				allow(a)
			}
		}
	}
	return added
}
