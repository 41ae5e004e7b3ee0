//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// The independent reference of the content-lost measure: GNU wget
// (wget -r -np -l inf over the same seeds) against its own servers over the
// same corpus tree. Unlike the Horseshoe reference crawl it shares none of
// Horseshoe's URL canonicalization, scope, trap filters or link extraction,
// so pages Horseshoe never reaches for any of those reasons show up here.
//
// Every file wget saves is mapped back to its URL through wget's -nv log
// ("URL:<url> [<size>] -> "<file>""), which names the URL after redirects
// and the file it was written to; --save-headers keeps the status line and
// Content-Type at the head of the file, so a body is decoded as the crawl
// decodes it (fetch.ToUTF8 with that Content-Type, then parse.Parse).

// wgetArgs are wget's options, before -o, -P and the seeds: recursive
// without a depth limit, never above a seed's directory, robots.txt obeyed
// (wget's default, made explicit), no retries, and the response header kept
// at the head of every saved file. --no-config keeps ~/.wgetrc and
// /etc/wgetrc out of it. No -E or -k: saved names stay those of the URLs.
// --trust-server-names names the file of a redirected response after the
// redirect's target, the URL the log names: without it the response to
// /posts (301 to /posts/) is written to the file "posts", where the
// directory posts/ already is, and wget fails.
var wgetArgs = []string{
	"--no-config", "-r", "-np", "-l", "inf", "-e", "robots=on",
	"--tries=1", "--timeout=10", "--save-headers", "--trust-server-names", "-nv",
}

// wgetSaved is a line of wget's -nv log: url was saved to file with size
// bytes of body.
var wgetSaved = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d URL: ?(\S+) \[(\d+)(?:/(\d+))?\] -> "(.*)" \[\d+\]$`)

// wgetFigures describes the wget reference crawl.
type wgetFigures struct {
	saved    int            // log lines naming a saved file
	again    int            // of them, URLs saved before (counted once)
	files    int            // distinct files saved
	requests int            // requests the servers saw
	html     int            // saved HTML responses (status 200), with or without words
	errors   map[string]int // "ERROR 404: Not Found." and the like, by message
	elapsed  time.Duration  // wget's run
	reading  time.Duration  // reading, decoding and parsing what it saved
}

// wgetEntry is one saved response, in the order wget saved them.
type wgetEntry struct {
	url  string // as wget requested it, in the wget servers' URL space
	file string
	size int
}

// measureWget measures the content the default crawl lost against wget's
// crawl wref and adds the figures to res; ref is the Horseshoe reference.
func measureWget(t *testing.T, seeds []string, kept *keptSets, ref, wref *crawlRecords, fig wgetFigures, res *qualityResult) {
	t.Helper()
	dflt := kept.dflt
	start := time.Now()
	lost := measureLost(seeds, kept, wref)
	res.WgetSavedFiles, res.WgetHTMLPages, res.WgetPages, res.WgetRequests = fig.files, fig.html, lost.pages, fig.requests
	res.WgetKeptByURL, res.WgetRepresented = lost.keptByURL, lost.represented
	res.WgetLost, res.WgetLostFraction, res.WgetLostPages, res.WgetLostByCause = lost.lost, lost.fraction, lost.lostPages, lost.byCause
	res.WgetErrors, res.WgetSeconds = fig.errors, fig.elapsed.Seconds()

	// The same page fetched by both crawls has the same shingle set: wget's
	// bodies are decoded and tokenized as the crawl's are.
	dfltSet := map[string][]uint64{}
	for _, p := range dflt.pages {
		dfltSet[p.url] = p.set
	}
	var differ []string
	compared := 0
	for _, p := range wref.pages {
		if s, ok := dfltSet[p.url]; ok {
			compared++
			if !slices.Equal(s, p.set) {
				differ = append(differ, p.url)
			}
		}
	}
	// The two references disagree where Horseshoe's URL handling, scope or
	// trap filters and wget's differ (and outside the seed prefixes, where
	// wget -np does not go).
	onlyWget, onlyRef := pagesOnlyIn(wref, ref, nil), pagesOnlyIn(ref, wref, func(u string) bool { return insidePrefix(u, seeds) })
	res.WgetPagesNotInReference, res.ReferencePagesNotInWget = len(onlyWget), len(onlyRef)
	res.WgetAnalysisSeconds = (fig.reading + time.Since(start)).Seconds()

	t.Logf("wget -r -np -l inf: %d responses saved (%d of them a URL saved before; %d files), %d HTML, %d HTML pages with words, %d requests, %s",
		fig.saved, fig.again, fig.files, fig.html, lost.pages, fig.requests, fig.elapsed.Round(time.Millisecond))
	for _, msg := range slices.Sorted(maps.Keys(fig.errors)) {
		t.Logf("  wget log: %d x %s", fig.errors[msg], msg)
	}
	t.Logf("pages saved by wget that the Horseshoe reference crawl did not fetch: %d %v", len(onlyWget), onlyWget[:min(maxListed, len(onlyWget))])
	t.Logf("pages inside the seed prefixes that the Horseshoe reference crawl fetched and wget did not save: %d %v", len(onlyRef), onlyRef[:min(maxListed, len(onlyRef))])
	t.Logf("shingle sets of %d pages fetched by both compared (%d differ); analysis %.1fs", compared, len(differ), res.WgetAnalysisSeconds)
	if len(differ) > 0 {
		t.Errorf("%d of %d pages fetched by both crawls: wget's body gives another shingle set than the crawl's stored text, e.g. %v",
			len(differ), compared, differ[:min(3, len(differ))])
	}
	// Horseshoe's own follow-every-link crawl reaches every page wget does: a
	// page its URL handling, scope or trap filters missed would show here.
	if len(onlyWget) > 0 {
		t.Errorf("%d pages saved by wget were not fetched by the Horseshoe reference crawl, e.g. %v",
			len(onlyWget), onlyWget[:min(3, len(onlyWget))])
	}
	if lost.insidePrefix != lost.pages {
		t.Errorf("wget -np saved %d HTML pages outside the seed prefixes", lost.pages-lost.insidePrefix)
	}
	if lost.pages < len(dflt.pages) {
		t.Errorf("wget saved %d HTML pages with words, fewer than the default crawl's %d", lost.pages, len(dflt.pages))
	}
	logLost(t, "wget", lost)
}

// pagesOnlyIn returns the sorted URLs of the pages of a that b has no page
// for (only those that keep accepts, when keep is not nil).
func pagesOnlyIn(a, b *crawlRecords, keep func(string) bool) []string {
	in := map[string]bool{}
	for _, p := range b.pages {
		in[p.url] = true
	}
	var only []string
	for _, p := range a.pages {
		if !in[p.url] && (keep == nil || keep(p.url)) {
			only = append(only, p.url)
		}
	}
	slices.Sort(only)
	return only
}

// wgetPath returns the path of wget. Without it the test is skipped, except
// under CI, where .ci/run installs it.
func wgetPath(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("wget")
	if err != nil {
		testtools.Require(t, false, "wget ("+err.Error()+")", "apt-get install wget (or make test-deps)")
	}
	return bin
}

// wgetReference crawls the corpus under root with wget, against servers of
// its own, and returns what it saved as crawl records in the URL space of
// to (the default crawl's servers): every saved HTML page with words, with
// its shingle set and, as via, the first page saved before it that links to
// it; byURL holds every saved URL.
func wgetReference(t *testing.T, root string, manifest []testweb.ManifestEntry, to *loopweb.Web,
	det *dedup.Detector) (*crawlRecords, wgetFigures) {
	t.Helper()
	bin := wgetPath(t)
	web3, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web3.Close()
	toDefault := urlMapper(web3, to)
	var seeds []string
	for _, m := range manifest {
		seeds = append(seeds, web3.URL(m.Host, m.Prefix))
	}

	dir := t.TempDir()
	out, logPath := filepath.Join(dir, "out"), filepath.Join(dir, "wget.log")
	args := append(slices.Clone(wgetArgs), "-o", logPath, "-P", out)
	args = append(args, seeds...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C") // untranslated log messages
	runErr := cmd.Run()
	fig := wgetFigures{elapsed: time.Since(start), requests: len(web3.Requests())}
	logText, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("wget log: %v (wget: %v)", err, runErr)
	}
	// Exit status 8 is "server issued an error response": the corpus has
	// broken links (404), which the log lists. Anything else is a failure.
	var exit *exec.ExitError
	if runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 8) {
		t.Fatalf("wget %s: %v\n%s", strings.Join(args, " "), runErr, unusual(logText, 20))
	}

	start = time.Now()
	entries, errs := parseWgetLog(t, logText)
	fig.saved, fig.errors = len(entries), errs
	fig.files = checkWgetLog(t, entries, out, web3)
	cr := &crawlRecords{byURL: map[string]*recordOf{}, request: fig.requests}
	type result struct {
		html  bool
		words int
		links []string
		set   []uint64
	}
	results := make([]result, len(entries))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
	)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []uint64
			for i := range next {
				e := entries[i]
				html, doc, err := readWgetFile(e)
				if err == nil && html {
					r := result{html: true, words: len(doc.Tokens)}
					for _, l := range doc.Links {
						r.links = append(r.links, toDefault(l.URL))
					}
					if r.words > 0 {
						r.set, buf = shingleSet(det, doc.Tokens, buf)
					}
					results[i] = r
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range entries {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}

	// via: the first page wget saved that links to the URL (wget's order is
	// breadth-first, so that is the page it found the URL on, or one of the
	// same depth). A link to a directory without its slash was redirected.
	via := map[string]string{}
	for i, e := range entries {
		u := toDefault(e.url)
		for _, l := range results[i].links {
			if _, ok := via[l]; !ok && l != u {
				via[l] = u
			}
		}
	}
	viaOf := func(u string) string {
		if v, ok := via[u]; ok {
			return v
		}
		return via[strings.TrimSuffix(u, "/")]
	}
	for i, e := range entries {
		u := toDefault(e.url)
		if _, ok := cr.byURL[u]; ok {
			// wget fetches a URL again when a redirect leads to it
			// (/posts 301 /posts/ after /posts/ itself): one page.
			fig.again++
			continue
		}
		cr.records++
		cr.byURL[u] = &recordOf{class: "saved by wget", via: viaOf(u)}
		r := results[i]
		if !r.html {
			continue
		}
		fig.html++
		if r.words == 0 {
			continue
		}
		cr.pages = append(cr.pages, qualityPage{url: u, via: viaOf(u), class: "saved by wget", set: r.set})
	}
	fig.reading = time.Since(start)
	return cr, fig
}

// parseWgetLog returns the saved responses that wget's -nv log names, in
// order, and counts its error lines by message.
func parseWgetLog(t *testing.T, log []byte) ([]wgetEntry, map[string]int) {
	t.Helper()
	var entries []wgetEntry
	errs := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := wgetSaved.FindStringSubmatch(line); m != nil {
			size, err := strconv.Atoi(m[2])
			if err != nil {
				t.Fatalf("wget log: size in %q: %v", line, err)
			}
			if m[3] != "" && m[3] != m[2] {
				t.Errorf("wget log: incomplete download: %q", line)
			}
			entries = append(entries, wgetEntry{url: m[1], size: size, file: m[4]})
			continue
		}
		if strings.Contains(line, " URL:") {
			t.Fatalf("wget log: a line naming a URL that the test cannot read: %q", line)
		}
		if _, msg, ok := strings.Cut(line, " ERROR "); ok {
			errs["ERROR "+msg]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("wget log: %v", err)
	}
	return entries, errs
}

// checkWgetLog asserts that the log maps every saved file to its URL: every
// regular file under out is named by the log, every file the log names is
// under out, and the URLs the log names are exactly the requests the servers
// answered with 200 (host and request URI, counted with repeats). It returns
// the number of files.
func checkWgetLog(t *testing.T, entries []wgetEntry, out string, web *loopweb.Web) int {
	t.Helper()
	named := map[string]bool{}
	for _, e := range entries {
		if rel, err := filepath.Rel(out, e.file); err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("wget saved %s to %s, outside %s", e.url, e.file, out)
		}
		named[filepath.Clean(e.file)] = true
	}
	var unnamed []string
	files := 0
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if !named[p] {
			unnamed = append(unnamed, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unnamed) > 0 {
		t.Fatalf("%d of %d files wget saved are not named by its log, e.g. %v", len(unnamed), files, unnamed[:min(3, len(unnamed))])
	}
	if files != len(named) {
		t.Fatalf("wget's log names %d files, %d are on disk", len(named), files)
	}

	served := map[string]int{}
	for _, r := range web.Requests() {
		if r.Method == http.MethodGet && r.Status == http.StatusOK {
			served[web.BaseURL(r.Host)+r.Path]++
		}
	}
	logged := map[string]int{}
	for _, e := range entries {
		logged[e.url]++
	}
	var diff []string
	for u, n := range logged {
		if served[u] != n {
			diff = append(diff, fmt.Sprintf("%s: logged %d, served %d", u, n, served[u]))
		}
	}
	for u, n := range served {
		if _, ok := logged[u]; !ok {
			diff = append(diff, fmt.Sprintf("%s: logged 0, served %d", u, n))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		t.Fatalf("wget's log and the servers' 200 responses differ for %d URLs, e.g. %v", len(diff), diff[:min(5, len(diff))])
	}
	return files
}

// readWgetFile reads a file saved with --save-headers: the status line and
// header, a blank line, then the body. It reports whether the response is
// an HTML page with status 200 and, if so, parses it as the crawl does.
// The body must have the size the log gives (a file two URLs were saved to
// holds the last one's body).
func readWgetFile(e wgetEntry) (bool, *parse.Document, error) {
	b, err := os.ReadFile(e.file)
	if err != nil {
		return false, nil, fmt.Errorf("wget file of %s: %w", e.url, err)
	}
	head, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
	if !ok {
		return false, nil, fmt.Errorf("wget file %s of %s: no header (--save-headers)", e.file, e.url)
	}
	if len(body) != e.size {
		return false, nil, fmt.Errorf("wget file %s of %s: body of %d bytes, the log says %d", e.file, e.url, len(body), e.size)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b[:len(head)+4])))
	status, err := tp.ReadLine()
	if err != nil {
		return false, nil, fmt.Errorf("wget file %s of %s: status line: %w", e.file, e.url, err)
	}
	proto, rest, _ := strings.Cut(status, " ")
	code, _, _ := strings.Cut(rest, " ")
	if !strings.HasPrefix(proto, "HTTP/") {
		return false, nil, fmt.Errorf("wget file %s of %s: status line %q", e.file, e.url, status)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return false, nil, fmt.Errorf("wget file %s of %s: header: %w", e.file, e.url, err)
	}
	ctype := hdr.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body) // as the crawl sniffs a missing type
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	if code != "200" || (mt != "text/html" && mt != "application/xhtml+xml") {
		return false, nil, nil
	}
	doc, err := parseLikeCrawl(body, ctype, e.url)
	if err != nil {
		return false, nil, fmt.Errorf("wget file %s: %w", e.file, err)
	}
	return true, doc, nil
}

// unusual returns up to n lines of wget's log other than saved files and
// 404s, with the line before each (wget names the URL on a line of its own).
func unusual(log []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	var out []string
	for i, l := range lines {
		if len(out) >= n {
			break
		}
		if wgetSaved.MatchString(l) || strings.HasSuffix(l, ":") || strings.HasSuffix(l, " ERROR 404: Not Found.") {
			continue
		}
		if i > 0 {
			out = append(out, lines[i-1])
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
