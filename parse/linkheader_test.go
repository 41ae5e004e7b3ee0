package parse

import (
	"net/url"
	"testing"
)

func TestHeaderCanonical(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page")
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"none", nil, ""},
		{"quoted", []string{`<https://example.com/c>; rel="canonical"`}, "https://example.com/c"},
		{"relative, unquoted", []string{`</c#frag>; rel=canonical`}, "http://example.com/c"},
		{"second of a list", []string{`</p2>; rel="next", </c>; rel="canonical"`}, "http://example.com/c"},
		{"rel list, case", []string{`<c>; title="x"; REL="alternate Canonical"`}, "http://example.com/dir/c"},
		{"second header value", []string{`</p>; rel=prev`, `</c>; rel="canonical"`}, "http://example.com/c"},
		{"not canonical", []string{`</c>; rel="canonicalx"`}, ""},
		{"non-http target", []string{`<mailto:a@b>; rel="canonical"`}, ""},
		{"unterminated", []string{`</c; rel="canonical"`}, ""},
	}
	for _, tt := range tests {
		if got := HeaderCanonical(tt.values, base); got != tt.want {
			t.Errorf("%s: HeaderCanonical(%q) = %q, want %q", tt.name, tt.values, got, tt.want)
		}
	}
}
