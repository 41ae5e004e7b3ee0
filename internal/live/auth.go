package live

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// MinTokenLength is the shortest token the server accepts.
const MinTokenLength = 16

// The security rule of the server (report, metrics and control API alike):
// without a token it listens on loopback only, and answers only requests
// that name a loopback host (a web page whose name was re-pointed at
// 127.0.0.1, DNS rebinding, is refused); with a token, every request, from
// loopback too, must carry it, as "Authorization: Bearer TOKEN" or as the
// password of HTTP basic authentication (for a browser), or get 401.

// CheckBind refuses to serve on addr (host:port) without a token unless its
// host is a loopback address or "localhost"; an empty host, 0.0.0.0, any
// other address or name needs one. A token shorter than MinTokenLength is
// refused too.
func CheckBind(addr, token string) error {
	if token != "" && len(token) < MinTokenLength {
		return fmt.Errorf("the token is %d characters long, want at least %d", len(token), MinTokenLength)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad address %q: want host:port, e.g. 127.0.0.1:8080", addr)
	}
	if token == "" && !loopbackHost(host) {
		return fmt.Errorf("serving on %s, which is not loopback, needs a token (serve.token in the config or HORSESHOE_TOKEN in the environment)", addr)
	}
	return nil
}

// loopbackHost reports whether host (no port) is "localhost" or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}

// guard applies the security rule to every request before next.
func guard(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !loopbackHost(host) {
				writeError(w, http.StatusForbidden, "this server answers requests to a loopback host only")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		got, ok := requestToken(r)
		// Hashes of equal length, compared in constant time: neither the
		// token's bytes nor its length leak through timing.
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Add("WWW-Authenticate", `Bearer realm="horseshoe"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="horseshoe", charset="UTF-8"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestToken returns the token of r's Authorization header: a bearer
// token, or the password of basic authentication.
func requestToken(r *http.Request) (string, bool) {
	if _, pw, ok := r.BasicAuth(); ok {
		return pw, true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
