package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a map; names not in it do not exist. No lookup leaves the machine.
type fakeResolver map[string][]string

func (r fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs, ok := r[strings.ToLower(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(addrs))
	for i, a := range addrs {
		out[i] = net.IPAddr{IP: net.ParseIP(a)}
	}
	return out, nil
}

func TestAddrPolicyCheckAddr(t *testing.T) {
	seed := AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.5/32")}}
	private := AddrPolicy{AllowPrivate: true}
	named := AddrPolicy{}
	if err := named.AllowEntries([]string{"169.254.169.254", "fd00:ec2::/112", "10.1.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	const (
		ok   = ""
		priv = "private"
		meta = "metadata"
	)
	tests := []struct {
		addr                          string
		zero, seed, private, explicit string
	}{
		{"8.8.8.8", ok, ok, ok, ok},
		{"2001:4860:4860::8888", ok, ok, ok, ok},
		{"127.0.0.5", priv, ok, ok, priv},
		{"127.0.0.6", priv, priv, ok, priv},
		{"::ffff:127.0.0.5", priv, ok, ok, priv},
		{"10.0.0.1", priv, priv, ok, priv},
		{"10.1.2.3", priv, priv, ok, ok},
		{"192.168.1.1", priv, priv, ok, priv},
		{"fd00::1", priv, priv, ok, priv},
		{"::1", priv, priv, ok, priv},
		{"100.64.0.1", priv, priv, ok, priv},
		{"169.254.169.254", meta, meta, meta, ok},
		{"169.254.170.2", meta, meta, meta, meta}, // ECS task metadata
		{"::ffff:169.254.169.254", meta, meta, meta, ok},
		{"64:ff9b::a9fe:a9fe", meta, meta, meta, ok}, // NAT64 of 169.254.169.254
		{"fe80::1", meta, meta, meta, meta},
		{"fd00:ec2::254", meta, meta, meta, ok},
		{"fd20:ce::254", meta, meta, meta, meta},
		{"100.100.100.200", meta, meta, meta, meta},
		{"192.0.0.192", meta, meta, meta, meta},
		{"168.63.129.16", meta, meta, meta, meta},
		// IPv6 forms that embed an IPv4 address are judged by it.
		{"::127.0.0.1", priv, priv, ok, priv},                          // IPv4-compatible
		{"::127.0.0.5", priv, ok, ok, priv},                            // IPv4-compatible of the seed
		{"::ffff:0:a9fe:a9fe", meta, meta, meta, ok},                   // IPv4-translated 169.254.169.254
		{"2002:a9fe:a9fe::", meta, meta, meta, ok},                     // 6to4 of 169.254.169.254
		{"2002:a00:1::1", priv, priv, ok, priv},                        // 6to4 of 10.0.0.1
		{"2002:808:808::1", ok, ok, ok, ok},                            // 6to4 of 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", priv, priv, ok, priv}, // Teredo: obfuscated, private
	}
	judge := func(p AddrPolicy, a netip.Addr) string {
		err := p.CheckAddr(a)
		switch {
		case err == nil:
			return ok
		case errors.Is(err, ErrMetadataAddress):
			return meta
		case errors.Is(err, ErrPrivateAddress):
			return priv
		}
		return "unexpected: " + err.Error()
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		for _, c := range []struct {
			name string
			p    AddrPolicy
			want string
		}{{"zero", AddrPolicy{}, tt.zero}, {"seed 127.0.0.5", seed, tt.seed}, {"private allowed", private, tt.private}, {"named", named, tt.explicit}} {
			if got := judge(c.p, a); got != c.want {
				t.Errorf("%s policy, %s: %q, want %q", c.name, tt.addr, got, c.want)
			}
		}
	}
}

func TestAddrPolicyCheckHost(t *testing.T) {
	p := AddrPolicy{AllowPrivate: true, AllowHosts: []string{"metadata.goog"}}
	tests := []struct {
		host    string
		refused bool
	}{
		{"example.org", false},
		{"example.org:8080", false},
		{"internal.example", false}, // judged on its addresses when connecting
		{"127.0.0.1:80", false},
		{"metadata.google.internal", true},
		{"METADATA.Google.Internal.:80", true},
		{"metadata", true},
		{"instance-data.ec2.internal", true},
		{"metadata.goog", false}, // named explicitly
		{"169.254.169.254", true},
		{"169.254.169.254:80", true},
		{"[fd00:ec2::254]:80", true},
		{"[fe80::1]", true},
		{"100.100.100.200", true},
		{"[fd00::1]:8080", false}, // private, allowed here
	}
	for _, tt := range tests {
		err := p.CheckHost(tt.host)
		if (err != nil) != tt.refused {
			t.Errorf("CheckHost(%q) = %v, want refused %v", tt.host, err, tt.refused)
		}
		if err != nil && !errors.Is(err, ErrPrivateAddress) {
			t.Errorf("CheckHost(%q) = %v, not ErrPrivateAddress", tt.host, err)
		}
	}
}

// TestPolicyDialerRefusesBeforeConnect checks that refused addresses, literal or resolved, are
// never handed to the dial function (no packet is sent to them), that allowed ones are, and that
// only the allowed addresses of a name resolving to both kinds are tried.
func TestPolicyDialerRefusesBeforeConnect(t *testing.T) {
	res := fakeResolver{
		"rebind.test":   {"10.0.0.1"},
		"meta.test":     {"169.254.169.254"},
		"v6meta.test":   {"fd00:ec2::254"},
		"mixed.test":    {"10.0.0.1", "127.0.0.5"},
		"seed.test":     {"127.0.0.5"},
		"public.test":   {"93.184.215.14"},
		"metadata.goog": {"169.254.169.254"},
	}
	var mu sync.Mutex
	var dialled []string
	errDialled := errors.New("dial recorded, not performed")
	d := &policyDialer{
		policy:   &AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.5/32")}, AllowHosts: []string{"metadata.goog"}},
		resolver: res,
		dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, addr)
			mu.Unlock()
			return nil, errDialled
		},
	}
	tests := []struct {
		addr   string
		want   string // "refused", "dns" or the address dialled
		detail string // in the error of a refusal
	}{
		{"10.0.0.1:80", "refused", "10.0.0.1"},
		{"169.254.169.254:80", "refused", "metadata"},
		{"[fd00::1]:80", "refused", "fd00::1"},
		{"[fe80::1]:80", "refused", "fe80::1"},
		{"127.0.0.6:80", "refused", "127.0.0.6"},
		{"rebind.test:80", "refused", "rebind.test resolves to 10.0.0.1"},
		{"meta.test:80", "refused", "169.254.169.254"},
		{"v6meta.test:443", "refused", "fd00:ec2::254"},
		{"metadata.google.internal:80", "refused", "metadata.google.internal"},
		{"nowhere.invalid:80", "dns", ""},
		{"127.0.0.5:80", "127.0.0.5:80", ""},
		{"seed.test:80", "127.0.0.5:80", ""},
		{"mixed.test:80", "127.0.0.5:80", ""},
		{"public.test:443", "93.184.215.14:443", ""},
		{"metadata.goog:80", "169.254.169.254:80", ""}, // named explicitly
	}
	for _, tt := range tests {
		mu.Lock()
		dialled = nil
		mu.Unlock()
		_, err := d.DialContext(context.Background(), "tcp", tt.addr)
		mu.Lock()
		got := append([]string(nil), dialled...)
		mu.Unlock()
		switch tt.want {
		case "refused":
			if len(got) != 0 || !errors.Is(err, ErrPrivateAddress) || !strings.Contains(err.Error(), tt.detail) ||
				!strings.Contains(err.Error(), "refused by the address policy") {
				t.Errorf("%s: dialled %v, err %v; want refused before dialling, naming %q", tt.addr, got, err, tt.detail)
			}
			if c := classify(context.Background(), err); c != ClassPrivate {
				t.Errorf("%s: class %s, want %s", tt.addr, c, ClassPrivate)
			}
		case "dns":
			var de *net.DNSError
			if len(got) != 0 || !errors.As(err, &de) || !de.IsNotFound {
				t.Errorf("%s: dialled %v, err %v; want a not-found DNS error", tt.addr, got, err)
			}
		default:
			if fmt.Sprint(got) != fmt.Sprint([]string{tt.want}) || !errors.Is(err, errDialled) {
				t.Errorf("%s: dialled %v (err %v), want [%s]", tt.addr, got, err, tt.want)
			}
		}
	}
}

// TestFetchAddressPolicy fetches through the built-in transport with a fake resolver: a name
// resolving to an allowed loopback address is fetched, names resolving to refused addresses are
// refused with class "private" (the dialler never connects to them, see above).
func TestFetchAddressPolicy(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "internal")
	}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	f := newTestFetcher(t, func(o *Options) {
		o.DenyPrivate = true
		o.Policy = AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
		o.Resolver = fakeResolver{"ok.test": {"127.0.0.1"}, "rebind.test": {"10.0.0.1"}, "meta.test": {"169.254.169.254"}}
	})
	res, err := f.Fetch(context.Background(), fmt.Sprintf("http://ok.test:%d/", port))
	if err != nil || string(res.RawBody) != "internal" {
		t.Fatalf("allowed name: %v", err)
	}
	for _, u := range []string{"http://rebind.test/", "http://meta.test/", "http://10.0.0.1/", "http://[fd00::1]/",
		"http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/", "http://100.100.100.200/"} {
		_, err := f.Fetch(context.Background(), u)
		wantClass(t, err, ClassPrivate)
	}
	_, err = f.Fetch(context.Background(), "http://nowhere.invalid/")
	wantClass(t, err, ClassDNS)
}
