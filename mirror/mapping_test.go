package mirror

import "testing"

func TestInfer(t *testing.T) {
	cases := []struct {
		name, dup, orig string
		want            Mapping
		ok              bool
	}{
		{"different prefixes, index.html vs dir", "http://h3/pgsql/15.18/index.html", "http://h2/docs/15/",
			Mapping{"http://h3", "/pgsql/15.18/", "http://h2", "/docs/15/"}, true},
		{"same prefix across hosts", "http://h9/", "http://h8/", Mapping{"http://h9", "/", "http://h8", "/"}, true},
		{"deeper on one side", "http://m/linux/man-pages/man1/ls.1.html", "http://o/man/man1/ls.1.html",
			Mapping{"http://m", "/linux/man-pages/", "http://o", "/man/"}, true},
		{"same host translations", "http://h/manual/pt-br/mod/core.html", "http://h/manual/en/mod/core.html",
			Mapping{"http://h", "/manual/pt-br/", "http://h", "/manual/en/"}, true},
		{"different file names share nothing", "http://h/a/x.html", "http://h/b/y.html", Mapping{}, false},
		{"ports kept in origin", "http://h:81/a/p.html", "http://h:80/b/p.html", Mapping{"http://h:81", "/a/", "http://h:80", "/b/"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Infer(tc.dup, tc.orig)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Infer = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestApply(t *testing.T) {
	m := Mapping{"http://h3", "/pgsql/15.18/", "http://h2", "/docs/15/"}
	cases := map[string]string{
		"http://h3/pgsql/15.18/sql.html":     "http://h2/docs/15/sql.html",
		"http://h3/pgsql/15.18/a/b.html?x=1": "http://h2/docs/15/a/b.html?x=1",
		"http://h3/pgsql/15.18":              "http://h2/docs/15",
		"http://h3/pgsql/15.18/":             "http://h2/docs/15/",
		"http://h3/other/x.html":             "",
		"http://h4/pgsql/15.18/sql.html":     "",
		"http://h3/pgsql/15.180/trap.html":   "",
	}
	for in, want := range cases {
		got, ok := m.Apply(in)
		if (want == "") == ok || got != want {
			t.Errorf("Apply(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if !(Mapping{"http://a", "/x/", "http://a", "/x/"}).Identity() || m.SameHost() {
		t.Error("Identity/SameHost wrong")
	}
}
