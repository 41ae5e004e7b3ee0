package loopweb

import (
	"bufio"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

const demoRoot = "../../testdata/demo"

var (
	hrefRE = regexp.MustCompile(`<a href="([^"]*)"`)
	headRE = regexp.MustCompile(`(?s)<head>.*?</head>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
)

// words returns the lowercased words of a page's visible text.
func words(page string) []string {
	text := headRE.ReplaceAllString(page, " ")
	text = html.UnescapeString(tagRE.ReplaceAllString(text, " "))
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' && r != '.'
	})
}

// jaccard5 is the Jaccard similarity of two pages' 5-word shingle sets.
func jaccard5(a, b string) float64 {
	shingles := func(w []string) map[string]bool {
		s := make(map[string]bool)
		for i := 0; i+5 <= len(w); i++ {
			s[strings.Join(w[i:i+5], " ")] = true
		}
		return s
	}
	sa, sb := shingles(words(a)), shingles(words(b))
	inter := 0
	for k := range sa {
		if sb[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

type crawled struct {
	status int
	body   string
}

// crawlDemo serves the demo and follows every link from SEEDS.txt that
// stays on a served host. Keys are "IP PATH".
func crawlDemo(t *testing.T) (*Web, map[string]crawled) {
	t.Helper()
	w, err := Start(demoRoot, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := newClient(t)
	f, err := os.Open(filepath.Join(demoRoot, "SEEDS.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var queue []*url.URL
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ip, p, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad seed line %q", sc.Text())
		}
		u, err := url.Parse(w.URL(ip, p))
		if err != nil {
			t.Fatal(err)
		}
		queue = append(queue, u)
	}
	if len(queue) != 3 {
		t.Fatalf("%d seeds, want 3", len(queue))
	}
	ipOf := map[string]string{}
	for _, ip := range w.Hosts() {
		ipOf[strings.TrimPrefix(w.BaseURL(ip), "http://")] = ip
	}
	got := map[string]crawled{}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		key := ipOf[u.Host] + " " + u.Path
		if _, seen := got[key]; seen {
			continue
		}
		r := do(t, c, "GET", u.String())
		got[key] = crawled{r.status, r.body}
		for _, m := range hrefRE.FindAllStringSubmatch(r.body, -1) {
			ref, err := u.Parse(html.UnescapeString(m[1]))
			if err != nil {
				t.Errorf("%s: bad link %q", key, m[1])
				continue
			}
			if ref.Scheme == "http" && ipOf[ref.Host] != "" {
				ref.Fragment = ""
				queue = append(queue, ref)
			} else {
				t.Errorf("%s: link %q leaves the demo web", key, m[1])
			}
		}
	}
	return w, got
}

func TestDemoCrawl(t *testing.T) {
	_, got := crawlDemo(t)
	perHost := map[string][3]int{} // URLs, 200s, 404s
	var missing []string
	for key, r := range got {
		ip, _, _ := strings.Cut(key, " ")
		n := perHost[ip]
		n[0]++
		switch r.status {
		case 200:
			n[1]++
		case 404:
			n[2]++
			missing = append(missing, key)
		default:
			t.Errorf("%s: status %d", key, r.status)
		}
		perHost[ip] = n
	}
	want := map[string][3]int{"127.0.0.2": {19, 19, 0}, "127.0.0.3": {19, 18, 1}, "127.0.0.4": {5, 5, 0}}
	for ip, n := range want {
		if perHost[ip] != n {
			t.Errorf("%s: [URLs 200s 404s] = %v, want %v", ip, perHost[ip], n)
		}
	}
	if !slices.Equal(missing, []string{"127.0.0.3 /mirror/guide/glossary.html"}) {
		t.Errorf("404s = %v, want only the mirror's glossary", missing)
	}

	body := func(key string) string {
		t.Helper()
		r, ok := got[key]
		if !ok || r.status != 200 {
			t.Fatalf("%s not crawled with 200", key)
		}
		return r.body
	}
	// Exact duplicates.
	if body("127.0.0.2 /guide/official-rules.html") != body("127.0.0.2 /guide/rules.html") {
		t.Error("official-rules.html is not byte-identical to rules.html")
	}
	if body("127.0.0.2 /guide/") != body("127.0.0.2 /guide/index.html") {
		t.Error("/guide/ differs from /guide/index.html")
	}
	rules, printed := body("127.0.0.2 /guide/rules.html"), body("127.0.0.2 /guide/print/rules.html")
	if rules == printed || !slices.Equal(words(rules), words(printed)) {
		t.Error("print/rules.html should be text-identical to rules.html but not byte-identical")
	}
	// Near-duplicates and the mirror's changed page.
	near := []struct {
		a, b     string
		min, max float64
	}{
		{"127.0.0.2 /guide/care.html", "127.0.0.2 /guide/archive/care-2024.html", 0.955, 0.975},
		{"127.0.0.2 /guide/care.html", "127.0.0.2 /guide/archive/care-2023.html", 0.96, 0.98},
		{"127.0.0.2 /guide/archive/care-2024.html", "127.0.0.2 /guide/archive/care-2023.html", 0.955, 0.975},
		{"127.0.0.2 /guide/court.html", "127.0.0.3 /mirror/guide/court.html", 0.96, 0.985},
	}
	for _, n := range near {
		if j := jaccard5(body(n.a), body(n.b)); j < n.min || j > n.max {
			t.Errorf("J(%s, %s) = %.3f, want in [%.3f, %.3f]", n.a, n.b, j, n.min, n.max)
		}
	}
	// Distinct pages: 150-600 words of text, pairwise J < 0.1.
	distinct := []string{"127.0.0.2 /guide/", "127.0.0.4 /blog/"}
	for _, p := range []string{"history", "anatomy", "tools", "forging", "fitting", "materials", "care", "game", "rules", "court", "pitching", "scoring", "glossary"} {
		distinct = append(distinct, "127.0.0.2 /guide/"+p+".html")
	}
	for _, p := range []string{"2025/04/opening-night", "2025/06/anvil-day", "2025/09/league-final"} {
		distinct = append(distinct, "127.0.0.4 /blog/"+p+".html")
	}
	for i, a := range distinct {
		if n := len(words(body(a))); n < 150 || n > 600 {
			t.Errorf("%s has %d words, want 150-600", a, n)
		}
		for _, b := range distinct[i+1:] {
			if j := jaccard5(body(a), body(b)); j >= 0.1 {
				t.Errorf("distinct pages %s and %s: J = %.3f", a, b, j)
			}
		}
	}
	ok200 := 0
	for _, r := range got {
		if r.status == 200 {
			ok200++
		}
	}
	if ok200 != 42 || len(distinct) != 18 {
		t.Errorf("%d pages with 200 and %d distinct, README says 42 and 18", ok200, len(distinct))
	}
}

// TestDemoMirror compares the files of the guide and of its mirror.
func TestDemoMirror(t *testing.T) {
	orig := filepath.Join(demoRoot, "127.0.0.2", "guide")
	mirror := filepath.Join(demoRoot, "127.0.0.3", "mirror", "guide")
	var identical, changed, absent []string
	err := filepath.WalkDir(orig, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(orig, p)
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(mirror, rel))
		switch {
		case err != nil:
			absent = append(absent, rel)
		case string(a) == string(b):
			identical = append(identical, rel)
		default:
			changed = append(changed, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(identical) != 16 || !slices.Equal(changed, []string{"court.html"}) || !slices.Equal(absent, []string{"glossary.html"}) {
		t.Errorf("mirror: %d identical, changed %v, absent %v; want 16, [court.html], [glossary.html]", len(identical), changed, absent)
	}
}

// TestDemoCrossHostLinks checks that the blog's port-less links to the
// guide are served with the guide's real port.
func TestDemoCrossHostLinks(t *testing.T) {
	w, got := crawlDemo(t)
	post := got["127.0.0.4 /blog/2025/06/anvil-day.html"].body
	if want := `href="` + w.URL("127.0.0.2", "/guide/forging.html") + `"`; !strings.Contains(post, want) {
		t.Errorf("anvil-day.html lacks %s", want)
	}
	if strings.Contains(post, `href="http://127.0.0.2/`) {
		t.Error("anvil-day.html still has a port-less link")
	}
}

func TestDemoSize(t *testing.T) {
	var total int64
	err := filepath.WalkDir(demoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			total += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total >= 200<<10 {
		t.Errorf("demo is %d bytes, want under 200 KB", total)
	}
}
