package fetch

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRobotsFailureCause checks that an unavailable robots.txt says why, survives the store with
// its cause, and tells failures retrying cannot cure from transient ones.
func TestRobotsFailureCause(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	unavailable := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	hang := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	tests := []struct {
		name      string
		url       string
		cause     string
		incurable bool
	}{
		{"connection refused", "http://" + closed + "/", "connection refused", true},
		{"untrusted certificate", tlsSrv.URL + "/", "tls: ", true},
		{"refused address", "http://10.0.0.1/", "refused by the address policy", true},
		{"metadata name", "http://metadata.google.internal/", "metadata", true},
		{"name resolving to a refused address", "http://rebind.test/", "10.0.0.1", true},
		{"nxdomain", "http://nowhere.invalid/", "dns: ", true},
		{"503", unavailable.URL + "/", "HTTP 503", false},
		{"timeout", hang.URL + "/", "timeout: ", false},
	}
	f := newTestFetcher(t, func(o *Options) {
		o.Timeout = 300 * time.Millisecond
		o.DenyPrivate = true
		o.Policy = AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
		o.Resolver = fakeResolver{"rebind.test": {"10.0.0.1"}}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemStore()
			c := NewRobotsCache(f, RobotsOptions{}, store, newFakeClock().Now)
			u, _ := url.Parse(tt.url)
			r, _, err := c.Get(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Unavailable() || !strings.Contains(r.Cause(), tt.cause) || r.Incurable() != tt.incurable {
				t.Errorf("unavailable %v, cause %q, incurable %v; want cause containing %q, incurable %v",
					r.Unavailable(), r.Cause(), r.Incurable(), tt.cause, tt.incurable)
			}
			again := RobotsFromEntry(store.m[RobotsKey(u)], 0)
			if again.Cause() != r.Cause() || again.Incurable() != r.Incurable() {
				t.Errorf("from the store: cause %q incurable %v, want %q %v", again.Cause(), again.Incurable(), r.Cause(), r.Incurable())
			}
		})
	}
	if ParseRobots(200, []byte("User-agent: *\nDisallow: /")).Cause() != "" {
		t.Errorf("an available robots.txt has a cause")
	}
}
