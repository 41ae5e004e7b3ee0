package hostile

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Address horrors (issue #16): redirects to the addresses and names a crawler must not connect
// to (cloud metadata services, link-local, private networks, a loopback address that is not the
// server's own, a name that a test resolver maps to a private address) and a page linking
// thousands of host names that do not resolve. A crawler that follows them sends packets to
// those addresses: tests must refuse them by policy before connecting.

// RebindHost is a name a test resolver maps to a private address (10.0.0.1), as a DNS rebinding
// attack would; on the real DNS it does not resolve (.invalid, RFC 6761).
const RebindHost = "rebind.horseshoe-nowhere.invalid"

// ManyHosts is the number of distinct unresolvable host names /many-hosts links to.
const ManyHosts = 3000

// ManyHost returns the i-th host name /many-hosts links to.
func ManyHost(i int) string { return fmt.Sprintf("h%04d.horseshoe-nowhere.invalid", i) }

// addressRedirects maps each redirecting path to its target.
var addressRedirects = map[string]string{
	"/redirect-metadata":      "http://169.254.169.254/latest/meta-data/",
	"/redirect-metadata-v6":   "http://[fd00:ec2::254]/latest/meta-data/",
	"/redirect-metadata-name": "http://metadata.google.internal/computeMetadata/v1/",
	"/redirect-alibaba":       "http://100.100.100.200/latest/meta-data/",
	"/redirect-link-local-v6": "http://[fe80::1]/",
	"/redirect-private":       "http://10.0.0.1/",
	"/redirect-ula":           "http://[fd00::1]/",
	"/redirect-loopback":      "http://127.0.0.254:1/",
	"/redirect-rebind":        "http://" + RebindHost + "/",
}

// addressHorrors lists the address horrors, in index order.
func addressHorrors() []Horror {
	return []Horror{
		{"/redirect-metadata", "redirect-metadata", "redirects to the cloud metadata service, 169.254.169.254"},
		{"/redirect-metadata-v6", "redirect-metadata-v6", "redirects to AWS's IPv6 metadata service, fd00:ec2::254"},
		{"/redirect-metadata-name", "redirect-metadata-name", "redirects to metadata.google.internal"},
		{"/redirect-alibaba", "redirect-alibaba", "redirects to Alibaba Cloud's metadata service, 100.100.100.200"},
		{"/redirect-link-local-v6", "redirect-link-local-v6", "redirects to fe80::1"},
		{"/redirect-private", "redirect-private", "redirects to 10.0.0.1"},
		{"/redirect-ula", "redirect-ula", "redirects to fd00::1"},
		{"/redirect-loopback", "redirect-loopback", "redirects to 127.0.0.254, a loopback address that is not the server's"},
		{"/redirect-rebind", "redirect-rebind", "redirects to " + RebindHost + ", which test resolvers map to 10.0.0.1"},
		{"/many-hosts", "many-hosts", fmt.Sprintf("links to %d host names that do not resolve", ManyHosts)},
	}
}

// serveAddresses serves the address horrors; it reports false for other paths.
func serveAddresses(w http.ResponseWriter, p string) bool {
	if target, ok := addressRedirects[p]; ok {
		redirectRaw(w, target)
		return true
	}
	if p != "/many-hosts" {
		return false
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Many hosts</title></head><body><h1>Many hosts</h1><ul>\n")
	for i := range ManyHosts {
		fmt.Fprintf(&b, "<li><a href=\"http://%s/\">host %d</a></li>\n", ManyHost(i), i)
	}
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
	return true
}
