package parse

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files from the current output")

// goldenPages are real pages from /work/shared/corpus (one per site) plus a hand-written
// tricky page, each with the URL it was served from.
var goldenPages = []struct {
	file string
	url  string
	opts Options
}{
	{"pgsql-plpython-data.html", "http://127.0.0.2/docs/15/plpython-data.html", Options{BotName: "horseshoe"}},
	{"git-gitdiffcore.html", "http://127.0.0.5/v2.55/gitdiffcore.html", Options{BotName: "horseshoe"}},
	{"httpd-fr-programs-httpd.html", "http://127.0.0.7/manual/fr/programs/httpd.html", Options{BotName: "horseshoe"}},
	{"flink-zh-what-is-flink-ml.html", "http://127.0.0.8/zh/what-is-flink-ml/", Options{BotName: "horseshoe"}},
	{"flink-alias-pulsar-flink.html", "http://127.0.0.8/2019/05/03/pulsar-flink.html", Options{BotName: "horseshoe"}},
	{"man-unicode.7.html", "http://127.0.0.11/man/man7/unicode.7.html", Options{BotName: "horseshoe"}},
	{"tricky.html", "http://example.com/site/sub/page.html?x=1#top", Options{BotName: "horseshoe", URLTokens: true}},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenPages {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Parse(body, mustURL(t, tc.url), tc.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", strings.TrimSuffix(tc.file, ".html")+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				var w Document
				if err := json.Unmarshal(want, &w); err != nil {
					t.Fatalf("bad golden file %s: %v", golden, err)
				}
				diffDocs(t, doc, &w)
			}
		})
	}
}

// diffDocs reports the fields of got that differ from want, readably.
func diffDocs(t testing.TB, got, want *Document) {
	t.Helper()
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"Title", got.Title, want.Title},
		{"Lang", got.Lang, want.Lang},
		{"BaseURL", got.BaseURL, want.BaseURL},
		{"Canonical", got.Canonical, want.Canonical},
		{"Refresh", got.Refresh, want.Refresh},
		{"NoIndex", got.NoIndex, want.NoIndex},
		{"NoFollow", got.NoFollow, want.NoFollow},
		{"Text", got.Text, want.Text},
	} {
		if f.got != f.want {
			t.Errorf("%s:\n got %q\nwant %q", f.name, f.got, f.want)
		}
	}
	if len(got.Links) != len(want.Links) {
		t.Errorf("len(Links) = %d, want %d", len(got.Links), len(want.Links))
	}
	for i := 0; i < min(len(got.Links), len(want.Links)); i++ {
		if got.Links[i] != want.Links[i] {
			t.Errorf("Links[%d]:\n got %+v\nwant %+v", i, got.Links[i], want.Links[i])
		}
	}
	if strings.Join(got.Tokens, "\x00") != strings.Join(want.Tokens, "\x00") {
		t.Errorf("Tokens differ: got %d tokens, want %d\n got %q\nwant %q", len(got.Tokens), len(want.Tokens), got.Tokens, want.Tokens)
	}
}

func mustURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
