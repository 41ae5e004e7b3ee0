//go:build go1.25

package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// A dial reaches the server registered at the ip:port it names (by IP or by
// a name given to Name) and the server sees a TCP-like peer; a port or IP
// where none listens, and a server after Close, refuse; an unknown name is
// not found. Inside a synctest bubble: Close leaves no goroutine behind
// (the bubble would report it blocked).
func TestNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		n := New()
		port := n.Serve("10.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			io.WriteString(w, "one "+r.Host+" "+local.String()+" from "+r.RemoteAddr)
		}))
		other := n.Serve("10.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "two")
		}))
		if port == other {
			t.Fatalf("two servers on one port %s", port)
		}
		n.Name("a.example", "10.0.0.1")
		n.Name("b.example", "10.0.0.2")

		// Name lookups: a name given, an IP literal, localhost, an unknown name.
		for host, want := range map[string]string{"a.example": "10.0.0.1", "b.example": "10.0.0.2", "10.9.8.7": "10.9.8.7", "localhost": "127.0.0.1"} {
			ips, err := n.LookupIPAddr(ctx, host)
			if err != nil || len(ips) != 1 || ips[0].IP.String() != want {
				t.Errorf("LookupIPAddr(%s): %v %v, want %s", host, ips, err, want)
			}
		}
		var dnsErr *net.DNSError
		if _, err := n.LookupIPAddr(ctx, "nowhere.example"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("LookupIPAddr(nowhere.example): %v, want not found", err)
		}

		client := &http.Client{Transport: n.Transport()}
		get := func(url string) (string, error) {
			resp, err := client.Get(url)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		want := "one a.example:" + port + " 10.0.0.1:" + port + " from 127.0.0.1:1"
		if got, err := get("http://a.example:" + port + "/"); got != want || err != nil {
			t.Errorf("GET a.example: %q %v, want %q", got, err, want)
		}
		if got, err := get("http://10.0.0.1:" + port + "/x"); !strings.HasPrefix(got, "one 10.0.0.1:"+port+" ") || err != nil {
			t.Errorf("GET by IP: %q %v", got, err)
		}
		if got, err := get("http://b.example:" + other + "/"); got != "two" || err != nil {
			t.Errorf("GET b.example: %q %v, want two", got, err)
		}

		refused := func(addr string) {
			t.Helper()
			c, err := n.DialContext(ctx, "tcp", addr)
			var op *net.OpError
			if err == nil {
				c.Close()
			}
			if !errors.As(err, &op) || op.Op != "dial" || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("dial %s: %v, want connection refused", addr, err)
			}
		}
		refused("10.0.0.1:" + other) // the IP, another server's port
		refused("10.0.0.3:" + port)  // no server on that IP
		refused("b.example:" + port) // a name, on an IP without that port
		if _, err := n.DialContext(ctx, "tcp", "nowhere.example:80"); !errors.As(err, &dnsErr) {
			t.Errorf("dial nowhere.example: %v, want a lookup error", err)
		}
		if _, err := n.DialContext(ctx, "tcp", "10.0.0.1"); err == nil {
			t.Error("dial without a port: no error")
		}

		n.Close()
		refused("10.0.0.1:" + port) // closed
	})
}
