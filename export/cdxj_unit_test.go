package export

import (
	"testing"
)

func TestSURTExamples(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://www.Example.com:8080/a/B?y=1&x=2", "com,example:8080)/a/b?x=2&y=1"},
		{"https://example.com:443/", "com,example)/"},
		{"http://www2.example.com", "com,example)/"},
		{"ftp://Example.com/", "ftp://Example.com/"},
	} {
		if got := SURT(c.in); got != c.want {
			t.Errorf("SURT(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
