package live

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckBind: without a token only loopback hosts may be bound; a token
// opens any address but must be long enough.
func TestCheckBind(t *testing.T) {
	token := strings.Repeat("k", MinTokenLength)
	cases := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.5:0", "", true},
		{"[::1]:0", "", true},
		{"localhost:8080", "", true},
		{"LOCALHOST.:8080", "", true},
		{"[::ffff:127.0.0.1]:0", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{"192.0.2.2:8080", "", false},
		{"10.0.0.1:8080", "", false},
		{"example.com:8080", "", false},
		{"localhost.example.com:8080", "", false},
		{"0.0.0.0:8080", token, true},
		{"192.0.2.2:8080", token, true},
		{"127.0.0.1:8080", "short", false},
		{"127.0.0.1", "", false},
	}
	for _, c := range cases {
		if err := CheckBind(c.addr, c.token); (err == nil) != c.ok {
			t.Errorf("CheckBind(%q, %q) = %v, want ok %v", c.addr, c.token, err, c.ok)
		}
	}
}

// TestGuard: with a token every request needs it (bearer or basic
// password), from loopback too; a wrong one, or one of another length, is
// 401 with a JSON error and a challenge. Without a token, a request naming a
// host that is not loopback (DNS rebinding) is 403.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	token := "s3cret-token-0123456789"
	g := guard(token, ok)
	cases := []struct {
		name string
		set  func(r *http.Request)
		code int
	}{
		{"none", func(r *http.Request) {}, 401},
		{"wrong bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token-0123456788") }, 401},
		{"prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token") }, 401},
		{"longer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") }, 401},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Token "+token) }, 401},
		{"wrong basic", func(r *http.Request) { r.SetBasicAuth(token, "nope") }, 401},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, 418},
		{"bearer lower case", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+token) }, 418},
		{"basic", func(r *http.Request) { r.SetBasicAuth("anyone", token) }, 418},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/api/status", nil)
		r.RemoteAddr = "127.0.0.1:5555"
		c.set(r)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		if rec.Code != c.code {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.code)
		}
		if c.code == 401 && (len(rec.Header().Values("WWW-Authenticate")) != 2 || !strings.Contains(rec.Body.String(), `"error"`)) {
			t.Errorf("%s: 401 without challenges or JSON error: %v %q", c.name, rec.Header(), rec.Body.String())
		}
	}

	open := guard("", ok)
	for host, code := range map[string]int{"127.0.0.1:8080": 418, "localhost:8080": 418, "[::1]:8080": 418,
		"127.0.0.9": 418, "evil.example:8080": 403, "192.0.2.2:8080": 403} {
		r := httptest.NewRequest("POST", "/api/stop", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		open.ServeHTTP(rec, r)
		if rec.Code != code {
			t.Errorf("no token, Host %s: %d, want %d", host, rec.Code, code)
		}
	}
}
