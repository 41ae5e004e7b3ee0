package variantweb

import (
	"net/url"
	"testing"
)

func TestRelPath(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"/a/b.html", "/a/c.html", "c.html"},
		{"/a/b.html", "/a/", "./"},
		{"/a/", "/a/", "./"},
		{"/a/b/c.html", "/a/d/", "../d/"},
		{"/a/b.html", "/x/y/z", "../x/y/z"},
		{"/a/b.html", "/a/c:d.html", "./c:d.html"},
		{"/", "/a/b.html", "a/b.html"},
	} {
		if got := relPath(tc.from, tc.to); got != tc.want {
			t.Errorf("relPath(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
		base, _ := url.Parse("http://h" + tc.from)
		ref, _ := url.Parse(relPath(tc.from, tc.to))
		if got := base.ResolveReference(ref).Path; got != tc.to {
			t.Errorf("relPath(%q, %q) resolves to %q", tc.from, tc.to, got)
		}
	}
}

func TestNextVersion(t *testing.T) {
	for in, want := range map[string]string{"/docs/15/": "/docs/16/", "/npm/v10.9.1/": "/npm/v10.9.2/", "/": "/v2/", "/manual/": "/v2/manual/"} {
		if got := nextVersion(in); got != want {
			t.Errorf("nextVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	s := &Site{Host: "127.0.0.2", Prefix: "/"}
	if _, err := Generate(s, "nope", 1, Options{}); err == nil {
		t.Error("unknown family accepted")
	}
	if _, err := Generate(s, FamilyDates, 1, Options{Host: "127.0.0.2"}); err == nil {
		t.Error("the source's host accepted as the variant's")
	}
	if _, err := Generate(s, FamilyDates, 1, Options{Host: "10.0.0.1"}); err == nil {
		t.Error("a non-loopback host accepted")
	}
}
