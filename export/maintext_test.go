package export

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// articlePage is a page with a site's navigation, header, sidebar and
// footer around one article.
const articlePage = `<!DOCTYPE html><html lang="en"><head><title>Tides | Example Site</title></head><body>
<header><a href="/">Example Site</a> <nav><ul><li><a href="/news">News</a></li><li><a href="/about">About us</a></li>
<li><a href="/contact">Contact</a></li><li><a href="/login">Login</a></li></ul></nav></header>
<div id="sidebar"><h3>Popular</h3><ul><li><a href="/a">Sidebar link one</a></li><li><a href="/b">Sidebar link two</a></li></ul></div>
<main><article><h1>Why the sea has tides</h1>
<p>The tides are caused by the gravitational pull of the moon and, to a lesser degree, the sun. The moon pulls the water
on the side of the earth facing it a little more than the earth itself, and the earth a little more than the water on the far side.</p>
<p>Two bulges of water therefore follow the moon around the planet, and most coasts see two high tides and two low tides
every lunar day, which lasts about twenty-four hours and fifty minutes, so the tides come later each day.</p>
<p>When the sun and the moon line up, at new and full moon, their pulls add up and the tides are larger: these are spring
tides. At the quarter moons they partly cancel, and the smaller tides are called neap tides.</p>
</article></main>
<footer><p>Copyright 2026 Example Site. <a href="/privacy">Privacy policy</a> <a href="/terms">Terms of use</a></p></footer>
</body></html>`

// TestMainText: the article's text, without the navigation, sidebar and
// footer around it; a page without an article has no main text and no error.
func TestMainText(t *testing.T) {
	text, err := MainText([]byte(articlePage), "http://example.org/tides")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gravitational pull of the moon", "neap tides", "two low tides"} {
		if !strings.Contains(text, want) {
			t.Errorf("main text lacks %q:\n%s", want, text)
		}
	}
	for _, boiler := range []string{"About us", "Login", "Sidebar link", "Privacy policy", "Copyright"} {
		if strings.Contains(text, boiler) {
			t.Errorf("main text has the boilerplate %q:\n%s", boiler, text)
		}
	}
	if !strings.Contains(text, "\n") {
		t.Errorf("paragraphs are not on their own lines:\n%s", text)
	}
	for _, page := range []string{"", "<html></html>", "<p>", `<meta http-equiv="refresh" content="0; url=/x">`} {
		text, err := MainText([]byte(page), "")
		if text != "" || err != nil {
			t.Errorf("MainText(%q) = %q, %v; want no text and no error", page, text, err)
		}
	}
}

// TestMainTextHostile: pages generated to cost the HTML parser and
// Readability the most get their main text, or are refused, in bounded
// time and memory. Without the limits, "deep" takes over 20 s, and
// "reopened-formatting" builds 8 million elements from 84 KB in 12 s.
func TestMainTextHostile(t *testing.T) {
	if raceEnabled {
		t.Skip("MainText runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	const maxTime = 8 * time.Second // of the page's own CPU time (testtools.OwnCPU): the slowest admitted page takes 1.5 to 3 s
	const maxAlloc = 256 << 20      // bytes allocated for one page
	refused := map[string]bool{"too-many-bytes": true, "too-many-elements": true, "too-deep": true, "deep": true,
		"reopened-formatting": true, "unclosed-formatting": true, "attributes": true, "tables": true, "noise": true}
	for name, page := range hostilePages() {
		alloc := allocated()
		var text string
		var err error
		took, wall := testtools.OwnCPU(func() { text, err = MainText(page, "http://127.0.0.2/hostile") })
		alloc = allocated() - alloc
		t.Logf("%-20s %7d KiB: %v, %d MiB allocated, %d bytes of text, err %v", name, len(page)>>10, took.Round(time.Millisecond), alloc>>20, len(text), err)
		if took > maxTime {
			t.Errorf("%s: took %v of CPU, more than %v", name, took, maxTime)
		}
		if wall > 10*maxTime {
			t.Errorf("%s: took %v, more than %v: a hang", name, wall, 10*maxTime)
		}
		if alloc > maxAlloc {
			t.Errorf("%s: allocated %d MiB, more than %d MiB", name, alloc>>20, maxAlloc>>20)
		}
		switch {
		case refused[name] && err == nil:
			t.Errorf("%s: not refused (%d bytes of text)", name, len(text))
		case refused[name]:
			if text != "" {
				t.Errorf("%s: refused with text", name)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case !strings.Contains(text, "lorem ipsum"):
			t.Errorf("%s: the text is not the page's: %.80q", name, text)
		}
	}
	if _, err := MainText(hostilePages()["too-many-bytes"], ""); !errors.Is(err, ErrMainTextTooLarge) {
		t.Errorf("too-many-bytes: err %v, want ErrMainTextTooLarge", err)
	}
}

// allocated returns the bytes the program has allocated so far.
func allocated() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzMainText: no page makes the extractor panic (a panic is recovered
// as an error, which this target reports), and an error comes without text.
func FuzzMainText(f *testing.F) {
	for _, seed := range []string{articlePage, "", "<p>", "<p><b id=1><b id=2><p>x<p>y", "<table><tr><td><table>x<tr>",
		"<div " + strings.Repeat(`a="b" `, 50) + ">x", "<!--", `<p title="`, "\x00\xff<<>>"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		text, err := MainText(page, "http://127.0.0.2/fuzz")
		if errors.Is(err, errExtractorPanic) {
			t.Fatal(err)
		}
		if err != nil && text != "" {
			t.Fatalf("text %q with error %v", text, err)
		}
	})
}
