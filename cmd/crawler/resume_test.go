//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/dedupeval"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// exitOf runs bin with args and returns its exit code, stdout and stderr.
func exitOf(tb testing.TB, bin string, args ...string) (int, string, string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, so.String(), se.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), so.String(), se.String()
	default:
		tb.Fatalf("run %s %v: %v", bin, args, err)
		return -1, "", ""
	}
}

// reportOf runs 'crawler report --format json' on data, which also proves
// that the store opens cleanly.
func reportOf(tb testing.TB, bin, data string) report.Data {
	tb.Helper()
	code, out, errOut := exitOf(tb, bin, "report", "--data", data, "--format", "json")
	if code != 0 {
		tb.Fatalf("report on %s: exit %d: %s", data, code, errOut)
	}
	var d report.Data
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		tb.Fatalf("report JSON: %v", err)
	}
	return d
}

// requestCounts counts the logged requests by host, method and path.
func requestCounts(reqs []loopweb.Request) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		m[r.Host+" "+r.Method+" "+r.Path]++
	}
	return m
}

// TestCrashSafeResume takes the real corpus crawled once uninterrupted (the
// reference: crawlCorpus, the same arguments on a web of its own), crawls it
// again killed with SIGKILL at random moments
// (HORSESHOE_SEED) and resumed until it finishes, and checks invariants
// that every correct pair of crawls meets, whatever the order of fetching:
//
//   - no record made before a kill is lost, and none changes except a skip
//     released later (by the lease-time repair or the skip audit) and then
//     fetched;
//   - no URL is requested twice by the reference
//     (TestCorpusEveryseedFetchedAndNoURLTwice), and by the killed crawl at
//     most once more per request in flight at a kill (workers per kill);
//   - no content is lost: every page the reference kept is kept by the
//     resumed crawl or represented there by a kept page at exact Jaccard >=
//     resumeJaccard, except through a skip (a mirror's or a duplicate
//     link's, not checked by Jaccard at crawl time), whose losses are held to
//     the bound of any single crawl of the corpus: no kept page at J >=
//     lostJaccard for fewer than maxLostFraction of the pages
//     (TestCorpusQuality);
//   - no two unique pages share a body (duplicate decisions after a restart
//     see the pages recorded before it).
//
// Class counts are not compared: which copy of a pair is fetched first, and
// so when a mirror is decided, moves them between two correct crawls.
func TestCrashSafeResume(t *testing.T) {
	t.Parallel() // its own corpus web; kill moments from its seed
	root, manifest, err := testweb.Corpus()
	if errors.Is(err, testweb.ErrNoCorpus) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run this test: %v", err)
		}
		t.Skipf("%v; get it: put the shared directory (corpus/web-test.tar.xz, corpus/MANIFEST.tsv) at ../shared beside the checkout", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	seed := testtools.Seed(t, "./cmd/crawler/")
	bin := buildCrawler(t)
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	var seeds []string
	for _, m := range manifest {
		seeds = append(seeds, web.URL(m.Host, m.Prefix))
	}
	const workers, runs = 8, 4
	crawlArgs := func(data string) []string {
		// Not --quiet: the skip audit logs what it releases at level info.
		return append([]string{"crawl", "--data", data, "--delay", "0", "--workers", fmt.Sprint(workers)}, seeds...)
	}

	// The reference: one uninterrupted crawl with the same arguments, on
	// the corpus web of crawlCorpus (its URLs mapped to this test's web).
	c := crawlCorpus(t)
	refData := c.data
	t.Logf("reference: %s, %d pages, %d requests, classes %v",
		c.elapsed.Round(time.Millisecond), c.report.Stats.Pages, c.report.Stats.Requests, c.report.Stats.ByClass)

	// The same crawl, killed with SIGKILL at moments drawn from the seed,
	// then resumed.
	rng := rand.New(rand.NewPCG(seed, 7))
	data := filepath.Join(t.TempDir(), "killed")
	kills := 0
	before := map[string]resumeRecord{} // every record seen after a kill, by URL
	for i := range runs {
		wait := 500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second)))
		cmd := exec.Command(bin, crawlArgs(data)...)
		var se bytes.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		what := "killed after"
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: %v: %s", i+1, err, se.String())
			}
			what = "finished by itself before the kill at"
		case <-time.After(wait):
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			kills++
		}
		if strings.Contains(se.String(), "panic") {
			t.Errorf("run %d: stderr mentions a panic:\n%s", i+1, se.String())
		}
		reportOf(t, bin, data) // the store opens cleanly
		recs := resumeRecords(t, data)
		t.Logf("run %d %s %s: %d records, skips released by the audit: %d", i+1, what, wait, len(recs), auditReleased(se.String()))
		maps.Copy(before, recs)
	}
	code, out, errOut := exitOf(t, bin, crawlArgs(data)...)
	if code != 0 {
		t.Fatalf("final run: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "crawl finished") {
		t.Errorf("final run did not finish the crawl: %q", out)
	}
	got := reportOf(t, bin, data)
	if !got.Stats.Complete {
		t.Errorf("resumed crawl not marked complete")
	}
	t.Logf("resumed after %d kills: %d pages, %d requests, classes %v; skips released by the audit in the final run: %d",
		kills, got.Stats.Pages, got.Stats.Requests, got.Stats.ByClass, auditReleased(errOut))

	// No record made before a kill is lost or changed. A skip may be
	// released (its counterpart failed or was skipped itself, or the audit
	// found it not kept) and its URL fetched: then a fetched or failed
	// record stands in its place.
	final := resumeRecords(t, data)
	bad := 0
	for _, u := range slices.Sorted(maps.Keys(before)) {
		b, f := before[u], final[u]
		var why string
		switch {
		case f == (resumeRecord{}):
			why = "lost"
		case b.class == storage.ClassMirrorSkipped:
			// a skip stands, or was released and its URL dealt with
		case f != b:
			why = fmt.Sprintf("changed to %+v", f)
		}
		if why != "" {
			if bad++; bad <= 10 {
				t.Errorf("%s: recorded before a kill as %+v, at the end %s", u, b, why)
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d records made before a kill lost or changed in all", bad)
	}

	// No URL requested twice, except those in flight at a kill: a request
	// whose page was not committed when the process died is made again.
	again := 0
	var twice []string
	for k, n := range requestCounts(web.Requests()) {
		if n > 1 {
			again += n - 1
			twice = append(twice, fmt.Sprintf("%s x%d", k, n))
		}
	}
	slices.Sort(twice)
	if again > workers*kills {
		t.Errorf("%d repeated requests after %d kills, want at most %d (workers per kill): %v", again, kills, workers*kills, head(twice, 20))
	} else {
		t.Logf("%d requests repeated (in flight at a kill): %v", again, head(twice, 20))
	}

	// Duplicate decisions after a restart still see the pages recorded
	// before it: no two unique pages share a body. Settlement makes that an
	// invariant of any crawl (docs/DEDUP.md): a page identical to a kept one
	// is a candidate with 84 of 84 samples equal and settles at J = 1.
	for _, c := range []struct{ name, data string }{{"reference", refData}, {"resumed crawl", data}} {
		if n, eg := uniqueCopies(t, c.data); n > 0 {
			t.Errorf("%s: %d unique pages share their body with another unique page, e.g. %v", c.name, n, eg)
		}
	}

	checkNoContentLost(t, refData, urlMapper(c.web, web), data)
}

// resumeJaccard is the exact Jaccard at which a kept page represents a page
// the reference kept. The crawl drops a fetched page only as an exact
// duplicate (the same body: J = 1) or as a near duplicate settled on the
// exact Jaccard of the two pages' looped shingle sets, J >= dedup.threshold
// = 0.90 (docs/DEDUP.md, rule 2: every candidate in the band is settled,
// none is accepted on its estimate). The sketch rule (m >= 76 of 84, which
// drops 0.4% of the pairs at J = 0.80) decides only when the candidate's text
// cannot be read; a page's text is committed in the transaction of its
// record (crawl/commit.go), so a kill cannot cause that, and a resumed crawl
// that falls back has lost a text. The original a near duplicate names is
// unique, so one hop suffices: the bound is the threshold itself, less a
// rounding margin for the test's own float computation of the same ratio.
const resumeJaccard = 0.90 - 1e-9

// checkNoContentLost checks that every page the reference crawl in refData
// (its URLs mapped by toWeb to those of the crawl in data) kept is kept by the crawl in data or represented there by a kept page at
// exact Jaccard >= resumeJaccard; pages lost through a skip (a mirror's or a
// duplicate link's: its content is not compared at crawl time) are held to
// the content-loss bound of any single crawl of the corpus, maxLostFraction
// (TestCorpusQuality). Pages are matched by URL and identical shingle set
// first, then through the duplicate's named original, and only the rest by a
// search of the kept pages' shingle index.
func checkNoContentLost(t *testing.T, refData string, toWeb func(string) string, data string) {
	t.Helper()
	det, err := dedup.New(crawl.DedupOptions(configs.Default().Dedup))
	if err != nil {
		t.Fatal(err)
	}
	identity := func(u string) string { return u }
	gotRecs, err := loadCrawl(data, det, identity, nil)
	if err != nil {
		t.Fatalf("resumed crawl's store: %v", err)
	}
	kept := newKeptSets(gotRecs)
	ref, err := loadCrawl(refData, det, toWeb, func(u string) bool { _, ok := kept.at[u]; return !ok })
	if err != nil {
		t.Fatalf("reference store: %v", err)
	}
	var refKept, byURL, identical, named, searched, skipNear, skipLost int
	var lost, skipExamples []string
	for i := range ref.pages {
		p := &ref.pages[i]
		if p.class != storage.ClassUnique {
			continue
		}
		refKept++
		if _, ok := kept.at[p.url]; ok {
			byURL++
			continue
		}
		if slices.ContainsFunc(kept.bySet[setDigest(p.set)], func(i int) bool { return slices.Equal(kept.sets[i], p.set) }) {
			identical++
			continue
		}
		if j, ok := namedOriginalJaccard(kept, p); ok && j >= resumeJaccard {
			named++
			continue
		}
		bj, bk := kept.best(p.set)
		if bj >= resumeJaccard {
			searched++
			continue
		}
		bu := ""
		if bk >= 0 {
			bu = kept.urls[bk]
		}
		cause, reason := lossReason(p, gotRecs, ref)
		line := fmt.Sprintf("%s (best kept J %.3f %s): %s", p.url, bj, bu, reason)
		if strings.Contains(cause, string(storage.ClassMirrorSkipped)) {
			// Held to the project's measure of a crawl's loss: lost
			// when no kept page has J >= lostJaccard with it.
			if bj >= lostJaccard {
				skipNear++
			} else {
				skipLost++
				skipExamples = append(skipExamples, line)
			}
			continue
		}
		lost = append(lost, line)
	}
	t.Logf("content: %d pages kept by the reference; after resume %d kept by URL, %d by an identical page, %d by the named original and %d by another kept page at J >= %.2f; through a skip, %d represented at J >= %.2f and %d lost",
		refKept, byURL, identical, named, searched, resumeJaccard, skipNear, lostJaccard, skipLost)
	for _, l := range head(skipExamples, 5) {
		t.Logf("  lost through a skip: %s", l)
	}
	if len(lost) > 0 {
		t.Errorf("%d pages the reference kept are neither kept nor represented at J >= %.2f after resume, e.g.:\n  %s",
			len(lost), resumeJaccard, strings.Join(head(lost, 10), "\n  "))
	}
	// The bound of any single crawl (TestCorpusQuality): lost pages under
	// maxLostFraction of the reference's fetched HTML pages with words.
	// Only pages the reference fetched can be lost against it, so this is
	// at most the resumed crawl's own loss against a crawl that fetches
	// everything, over fewer pages: no looser than the project's bound.
	if n := len(ref.pages); n > 0 && float64(skipLost)/float64(n) >= maxLostFraction {
		t.Errorf("%d of %d pages of the reference lost through a skip after resume (no kept page at J >= %.2f), the bound of any crawl is under %.1f%%",
			skipLost, n, lostJaccard, 100*maxLostFraction)
	}
}

// namedOriginalJaccard follows the original that the kept crawl's records
// name for p's URL (through a chain of skips) to a kept page and returns
// their exact Jaccard.
func namedOriginalJaccard(k *keptSets, p *qualityPage) (float64, bool) {
	u := p.url
	for hops := 0; hops < 8; hops++ {
		r, ok := k.dflt.byURL[u]
		if !ok || r.dupOf == "" {
			return 0, false
		}
		u = r.dupOf
		if i, ok := k.at[u]; ok {
			return dedupeval.Jaccard(p.set, k.sets[i]), true
		}
	}
	return 0, false
}

// uniqueCopies opens a finished crawl's store and counts the unique pages
// (with words) whose body equals that of another unique page.
func uniqueCopies(tb testing.TB, data string) (int, []string) {
	tb.Helper()
	db, err := storage.Open(data, storage.Options{ReadOnly: true})
	if err != nil {
		tb.Fatalf("open %s: %v", data, err)
	}
	defer db.Close()
	seen := map[string]string{}
	n := 0
	var eg []string
	err = db.ForEachPage(func(p *storage.Page) error {
		if p.Class == storage.ClassUnique && p.Words > 0 && p.SHA256 != "" {
			if first, ok := seen[p.SHA256]; ok {
				if n++; n <= 3 {
					eg = append(eg, p.URL+" = "+first)
				}
			} else {
				seen[p.SHA256] = p.URL
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n, eg
}

// resumeRecord is what TestCrashSafeResume compares of a record.
type resumeRecord struct {
	class       storage.Class
	status      int
	sha256      string
	duplicateOf string
}

// resumeRecords reads every page and skip record of the store in data, by
// URL (a page record over a skip record of the same URL).
func resumeRecords(tb testing.TB, data string) map[string]resumeRecord {
	tb.Helper()
	db, err := storage.Open(data, storage.Options{ReadOnly: true})
	if err != nil {
		tb.Fatalf("open %s: %v", data, err)
	}
	defer db.Close()
	m := map[string]resumeRecord{}
	if err := db.ForEachSkipped(func(p *storage.Page) error {
		m[p.URL] = resumeRecord{class: p.Class, duplicateOf: p.DuplicateOf}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	if err := db.ForEachPage(func(p *storage.Page) error {
		m[p.URL] = resumeRecord{class: p.Class, status: p.Status, sha256: p.SHA256, duplicateOf: p.DuplicateOf}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return m
}

// auditReleased sums the counts of the skip audit's log lines ("skips
// released before the end") in a run's stderr.
func auditReleased(stderr string) int {
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "skips released before the end") {
			continue
		}
		if _, rest, ok := strings.Cut(line, " count="); ok {
			var c int
			fmt.Sscan(rest, &c)
			n += c
		}
	}
	return n
}

// TestBadInput runs the binary on bad command lines, configs and data dirs:
// each must exit 2 (usage) or 1 (runtime) with exactly one line on stderr,
// starting with "crawler:", and leave the data dir as it was.
func TestBadInput(t *testing.T) {
	bin := buildCrawler(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badYAML := write("bad.yaml", "crawl: [unclosed\n")
	badValue := write("value.yaml", "crawl:\n  workers: 0\npoliteness:\n  delay: soon\n")
	twoBad := write("two.yaml", "crawl:\n  workers: 0\n  max_pages: -1\n")
	unknownKey := write("unknown.yaml", "crawl:\n  wrokers: 4\n")
	unreadable := write("unreadable.yaml", "crawl:\n  workers: 4\n")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	notData := filepath.Join(dir, "notdata")
	if err := os.MkdirAll(notData, 0o755); err != nil {
		t.Fatal(err)
	}
	write("notdata/notes.txt", "my notes, not a crawl\n")
	aFile := write("afile", "x")

	// A store written by "another version".
	oldData := filepath.Join(dir, "old")
	db, err := storage.Open(oldData, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutMeta(storage.MetaVersion, []byte("horseshoe-storage-0")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A store held open by "another crawl" (this process).
	locked := filepath.Join(dir, "locked")
	ldb, err := storage.Open(locked, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ldb.Close()

	empty := filepath.Join(dir, "empty")
	const url = "http://127.0.0.1:9/"
	tests := []struct {
		name string
		args []string
		code int
		want string // substring of the stderr line
	}{
		{"malformed seed", []string{"crawl", "--data", empty, "http://exa mple.com/"}, 2, "seed"},
		{"relative seed", []string{"crawl", "--data", empty, "example.com/page"}, 2, "seed"},
		{"no host", []string{"crawl", "--data", empty, "http://"}, 2, "seed"},
		{"ftp seed", []string{"crawl", "--data", empty, "ftp://example.com/"}, 2, "ftp"},
		{"file seed", []string{"crawl", "--data", empty, "file:///etc/passwd"}, 2, "seed"},
		{"javascript seed", []string{"crawl", "--data", empty, "javascript:alert(1)"}, 2, "seed"},
		{"no seeds", []string{"crawl", "--data", empty}, 2, "seed"},
		{"missing seeds file", []string{"crawl", "--data", empty, "--seeds", filepath.Join(dir, "nope.txt")}, 2, "seeds"},
		{"missing config", []string{"crawl", "--data", empty, "--config", filepath.Join(dir, "nope.yaml"), url}, 2, "config"},
		{"unreadable config", []string{"crawl", "--data", empty, "--config", unreadable, url}, 2, "config"},
		{"invalid YAML", []string{"crawl", "--data", empty, "--config", badYAML, url}, 2, "config"},
		{"invalid values", []string{"crawl", "--data", empty, "--config", badValue, url}, 2, "soon"},
		{"two invalid values", []string{"crawl", "--data", empty, "--config", twoBad, url}, 2, "max_pages"},
		{"unknown key", []string{"crawl", "--data", empty, "--config", unknownKey, url}, 2, "wrokers"},
		{"workers flag", []string{"crawl", "--data", empty, "--workers", "0", url}, 2, "workers"},
		{"negative delay", []string{"crawl", "--data", empty, "--delay", "-1s", url}, 2, "delay"},
		{"bad flag value", []string{"crawl", "--data", empty, "--workers", "many", url}, 2, "workers"},
		{"unknown flag", []string{"crawl", "--data", empty, "--wrokers", "4", url}, 2, "wrokers"},
		{"unknown command", []string{"crawlx"}, 2, "crawlx"},
		{"data dir of another version", []string{"crawl", "--data", oldData, url}, 1, "version"},
		{"not a data dir", []string{"crawl", "--data", notData, url}, 1, "not a Horseshoe data dir"},
		{"data dir is a file", []string{"crawl", "--data", aFile, url}, 1, "file"},
		{"data dir in use", []string{"crawl", "--data", locked, url}, 1, "in use"},
		{"report on a non-data dir", []string{"report", "--data", notData}, 2, "no crawl"},
		{"report of another version", []string{"report", "--data", oldData}, 1, "version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "unreadable config" && os.Geteuid() == 0 {
				t.Skip("root reads files without read permission")
			}
			code, _, errOut := exitOf(t, bin, tc.args...)
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "crawler: ") {
				t.Errorf("stderr is %d lines, want one line starting with \"crawler: \":\n%s", len(lines), errOut)
			}
			if !strings.Contains(strings.ToLower(errOut), strings.ToLower(tc.want)) {
				t.Errorf("stderr does not name the problem (%q):\n%s", tc.want, errOut)
			}
		})
	}

	// Nothing stored was damaged: the old store still has its version and
	// the non-data dir its file and nothing else.
	db, err = storage.Open(oldData, storage.Options{ReadOnly: true})
	if !errors.Is(err, storage.ErrVersion) {
		t.Errorf("old store after the attempts: %v, want ErrVersion", err)
	}
	if db != nil {
		db.Close()
	}
	if entries, err := os.ReadDir(notData); err != nil || len(entries) != 1 {
		t.Errorf("non-data dir changed: %v %v", entries, err)
	}
	if _, err := os.Stat(empty); err == nil {
		if entries, _ := os.ReadDir(empty); len(entries) > 0 {
			t.Errorf("a refused crawl left %d files in %s", len(entries), empty)
		}
	}
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }
