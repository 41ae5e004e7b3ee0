package parse

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

// streamOpts are the options of the differential tests: every output of Parse on.
var streamOpts = Options{BotName: "horseshoe", URLTokens: true, TitleTokens: true, MaxTokens: 100_000}

// diffStreamTree parses body both ways. When the streaming pass takes the page, its
// Document must equal the tree's. It reports whether the stream took the page.
func diffStreamTree(t testing.TB, body []byte, pageURL string) bool {
	t.Helper()
	page, err := whatwgurl.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseStream(body, page, streamOpts)
	if !ok {
		return false
	}
	want := parseTree(body, page, streamOpts)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the streaming pass differs from the tree:", pageURL)
		diffDocs(t, got, want)
	}
	return true
}

// TestStreamMatchesTreeOnCorpus: on every HTML page of the shared corpus, the
// streaming pass either gives up or yields exactly the tree's Document. The share of
// pages that go to the tree is logged.
func TestStreamMatchesTreeOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the end-to-end tier's: every page of the shared corpus (about 18 s of CPU)")
	}
	if raceEnabled {
		// About 18 s of CPU without the race detector, five times that with it; the
		// race tier runs TestParseConcurrent and the hand-written cases instead.
		t.Skip("the corpus differential is too slow under the race detector")
	}
	root, _ := testweb.NeedCorpus(t)
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".html") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no HTML pages under %s", root)
	}
	var streamed, next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || t.Failed() {
					return
				}
				body, err := os.ReadFile(files[i])
				if err != nil {
					t.Error(err)
					return
				}
				rel, _ := filepath.Rel(root, files[i])
				if diffStreamTree(t, body, "http://"+filepath.ToSlash(rel)) {
					streamed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	n := int64(len(files))
	t.Logf("%d pages: %d read by the streaming pass, %d (%.1f%%) fell back to the tree",
		n, streamed.Load(), n-streamed.Load(), 100*float64(n-streamed.Load())/float64(n))
}

// streamCases are hand-written pages: ordinary constructs the streaming pass must
// read itself (stream true), and hostile ones where it must give up or agree with
// the tree.
var streamCases = []struct {
	name   string
	body   string
	stream bool // the streaming pass must take the page
}{
	{"plain", `<!doctype html><html lang=EN><head><title> A  title </title><meta name=robots content=noindex></head><body><p>Hello <b>big</b> world<p>two</body></html>`, true},
	{"implied", `<title>t</title>text<div>a<p>b<p>c</div>d<ul><li>x<li>y</ul><dl><dt>a<dd>b<dt>c</dl>`, true},
	{"head after head", `<html><head><title>t</title></head> <meta name=robots content=nofollow><script>x</script><link rel=next href=/n> <body>b`, true},
	{"tables", `<table><colgroup><col><col></colgroup><caption>cap <b>x</b></caption><tr><td>a<td>b<b>c</b><tr><th>d</table>after`, true},
	{"nested tables", `<table><tr><td><table><tr><td>in</table>out</td></tr></table>x`, true},
	{"svg", `<p>a<svg viewBox="0 0 1 1"><title>tip</title><path d="M0"/><g><circle r=1></circle></g><text>svg text</text></svg>b</p><svg/>c`, true},
	{"hidden", `<div hidden>no<a href=/h>hid</a></div><span style="display: none !important">no</span><p>yes<a href="/v?x#f">vis <i>ible</i></a>`, true},
	{"raw", `<script>a<b</script><style>p{}</style><noscript><a href=/ns>x</a></noscript><textarea>
ta</textarea><iframe src=/f>if</iframe><xmp><b></xmp>`, true},
	{"ignored tags merge text", "a\xe2\x80</span>\xa8b<td>c\x00d</x>e", true},
	{"comments split text", "a\xe2\x80<!--c-->\xa8b", true},
	{"after body", `<body><div hidden>x</body><!--c-->y</html> z<p>w`, true},
	{"formatting closed by own tag", `<b><i>x</i></b><a href=/a><span>y</a>z<p><b>q</b></p>`, true},
	{"end p without p", `a</p>b</br>c`, true},
	{"forms", `<form id=a><input name=q><form>ignored</form>x<table><form><tr><td>c</table>`, true},

	// Constructs the tree builder reorders: the stream must give up or agree.
	{"foster parenting", `<table>text<tr><td>a</td>b</tr><a href=/f>f</a></table>`, false},
	{"misnested formatting", `<b>1<p>2</b>3</p><a href=/x><div>4</a>5</div>`, false},
	{"reconstructed", `<p><a href=/r>x</p>y<li><b>z</li>w`, false},
	{"nested a", `<a href=/1>one<a href=/2>two</a>`, false},
	{"template", `<template><a href=/t>t</a><title>tt</title></template><p>x`, false},
	{"select", `<select><option>o1<a href=/s>s</a><option>o2</select>x`, false},
	{"frameset", `<frameset><frame src=/f1><frame src=/f2></frameset>`, false},
	{"math", `<math><mi>x</mi><annotation-xml encoding=text/html><a href=/m>m</a></annotation-xml></math>`, false},
	{"html attrs", `<p>x<html lang=fr hidden>y<body hidden>z`, false},
	{"deep", strings.Repeat("<div>", 600) + "deep" + strings.Repeat("<span>", 600), false},
	{"svg breakout", `<svg><path><p>html<b>bold</svg>after`, false},
	{"svg integration", `<svg><foreignObject><a href=/fo>fo</a></foreignObject><desc><b>d</b></desc></svg>`, false},
	{"table in p", `<p>a<table><tr><td>b</table>c`, false},
	{"noahs ark", `<b><b><b><b>x</b></b></b></b>y`, false},
	{"object in cell", `<table><tr><td><b><object>x</td></tr></table>y`, false},
	{"form removed", `<form hidden><div>x</form>y`, false},
	{"unclosed everything", `<html><head><title>t<body><table><tr><td><a href=/u>u<div>d`, false},
	{"broken attributes", `<a href="/q' rel=nofollow>x<img src=/i.png alt='>y<a href=/z =bad>z`, false},
	{"plaintext", `a<plaintext><b>x</b>`, false},
	{"pre newline", "<pre>\nx</pre><listing>\n\ny</listing><textarea>\n\nz</textarea>", true},
	{"cdata", `<svg><![CDATA[x<y]]></svg><![CDATA[z]]>`, true},
	{"nul in svg", "<svg><text>a\x00b</text></svg>c\x00d", true},
}

func TestStreamMatchesTree(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			took := diffStreamTree(t, []byte(tc.body), "http://example.com/d/p.html")
			if tc.stream && !took {
				t.Errorf("the streaming pass gave up on an ordinary page")
			}
			t.Logf("streamed: %v", took)
		})
	}
}

// TestStreamMatchesTreeOnGoldenPages: the golden pages, read both ways, give the same
// Document wherever the streaming pass takes them (it gives up on the hand-written
// tricky page and on pages with misnested links).
func TestStreamMatchesTreeOnGoldenPages(t *testing.T) {
	for _, gp := range goldenPages {
		body, err := os.ReadFile(filepath.Join("testdata", gp.file))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: streamed %v", gp.file, diffStreamTree(t, body, gp.url))
	}
}

func FuzzParseStreamEqualsTree(f *testing.F) {
	for _, tc := range streamCases {
		f.Add([]byte(tc.body))
	}
	for _, seed := range []string{
		`<table><tr><td>1<td>2</tr>x</table>`,
		`<div><b><i>x</b></i></div>`,
		`<p><b hidden>a<p>b`,
		`<noscript><noscript>x</noscript></noscript>y`,
		`<template><template>x</template></template>`,
		"\xff\xfe<a href=\xc3>\xe2\x82</a>\x00<p>\xed\xa0\x80",
		`<a href=x <b>y</b>`,
		`<svg><style>a<b>c</style><script>d</script><a xlink:href=/x>e</a></svg>`,
		`<table><caption><table><tr><td>x</table></caption></table>`,
		`<body><object><b>x</object>y<applet><i>z</applet>`,
		`<h1><h2>x</h1>y<button><button>z`,
		`<li><div><li>x</div></li><dd><p><dt>y`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		diffStreamTree(t, body, "http://example.com/d/p.html")
	})
}
