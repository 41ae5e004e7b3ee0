//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// mirrorPair is one of the corpus README's mirror pairs.
type mirrorPair struct {
	origIP, origPrefix, copyIP, copyPrefix string
}

var corpusMirrorPairs = []mirrorPair{
	{"127.0.0.2", "/docs/15/", "127.0.0.3", "/pgsql/15.18/"},
	{"127.0.0.5", "/v2.55/", "127.0.0.6", "/latest/"},
	{"127.0.0.8", "/", "127.0.0.9", "/"},
	{"127.0.0.11", "/man/", "127.0.0.12", "/linux/man-pages/"},
}

// partialCopies are the copies of corpusMirrorPairs that lack pages their
// original serves (the corpus README: pgsql's sql-*, release-*, catalog-*;
// 127.0.0.9's zh/; 127.0.0.12's man2/ and man3/): the original is the side
// that holds more (docs/MIRRORS.md, "Which side is the original"), whichever
// side the crawl meets first. The other pair has no such evidence and its
// mirror is the side met second.
var partialCopies = map[string]bool{"127.0.0.3": true, "127.0.0.9": true, "127.0.0.12": true}

// optionalMirrorPairs may be reported as mirrors, or not: two builds of the
// git 2.39 documentation from different sources (Debian's and upstream's),
// near-identical page for page under a path mapping (0.88 of the pages
// within J >= 0.90, 0.96 with the differences systematic to the pair left
// out; docs/MIRRORS.md). Treating them as mirrors saves requests and loses
// nothing (issue 17).
var optionalMirrorPairs = []mirrorPair{
	{"127.0.0.5", "/v2.39/", "127.0.0.4", "/doc/git/"},
}

// optionalMirror reports whether "a -> b" (ip+prefix each) is an optional pair,
// in either direction.
func optionalMirror(a, b string) bool {
	for _, p := range optionalMirrorPairs {
		x, y := p.origIP+p.origPrefix, p.copyIP+p.copyPrefix
		if (a == x && b == y) || (a == y && b == x) {
			return true
		}
	}
	return false
}

func ipOf(hostport string) string { return strings.Split(hostport, ":")[0] }

// crawlPhases crawls the given seed groups one after the other into one data
// dir (each group to completion, the next added by resuming with new seeds)
// and returns the report.
func crawlPhases(t *testing.T, w *loopweb.Web, config string, groups ...[]string) report.Data {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	for _, seeds := range groups {
		args := []string{"crawl", "--data", data, "--delay", "0", "--workers", "8", "--quiet"}
		if config != "" {
			args = append(args, "--config", config)
		}
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append(args, seeds...), &out, &errOut); err != nil {
			t.Fatalf("crawl: %v\n%s", err, errOut.String())
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"report", "--data", data, "--format", "json", "--out", jsonPath}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var d report.Data
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// requestsUnder counts the requests a crawl sent to ip under prefix, from
// the request log entries after index from.
func requestsUnder(w *loopweb.Web, ip, prefix string, from int) int {
	n := 0
	for _, r := range w.Requests()[from:] {
		if r.Host == ip && strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

// TestMirrorsWhicheverHostFirst checks issue #4's done-means on the real
// corpus: whichever host of each pair is crawled first, the four mirror pairs
// are found with the right prefix mappings and no other host pair is; no
// content is lost (127.0.0.3 lacks pages of 127.0.0.2); and the saving against
// a crawl that follows every link is measured.
func TestMirrorsWhicheverHostFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls the real corpus five times")
	}
	t.Parallel() // its own corpus webs
	root := corpusRoot(t)
	w, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	var origSeeds, copySeeds []string
	for _, p := range corpusMirrorPairs {
		origSeeds = append(origSeeds, w.URL(p.origIP, p.origPrefix))
		copySeeds = append(copySeeds, w.URL(p.copyIP, p.copyPrefix))
	}

	// Reference: every link followed, no mirror handling.
	cfg := filepath.Join(t.TempDir(), "follow-all.yaml")
	if err := os.WriteFile(cfg, []byte("crawl:\n  skip_duplicate_links: false\nmirror:\n  enabled: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mark := len(w.Requests())
	crawlPhases(t, w, cfg, append(append([]string{}, origSeeds...), copySeeds...))
	refCopy, refOrig := map[string]int{}, map[string]int{}
	for _, p := range corpusMirrorPairs {
		refCopy[p.copyIP] = requestsUnder(w, p.copyIP, p.copyPrefix, mark)
		refOrig[p.origIP] = requestsUnder(w, p.origIP, p.origPrefix, mark)
	}

	for _, order := range []string{"original first", "mirror first"} {
		t.Run(order, func(t *testing.T) {
			first, second := origSeeds, copySeeds
			if order == "mirror first" {
				first, second = copySeeds, origSeeds
			}
			mark := len(w.Requests())
			d := crawlPhases(t, w, "", first, second)
			pages := pagesByURL(&d)

			// The four pairs, with the right prefixes: a partial copy is
			// the mirror in either order; of a pair without lacks, the
			// side crawled second.
			found := map[string]report.Mirror{}
			for _, m := range d.Mirrors {
				found[ipOf(m.Host)+m.Prefix+" -> "+ipOf(m.MirrorOf)+m.OriginalPrefix] = m
			}
			for _, p := range corpusMirrorPairs {
				key := p.copyIP + p.copyPrefix + " -> " + p.origIP + p.origPrefix
				if order == "mirror first" && !partialCopies[p.copyIP] {
					key = p.origIP + p.origPrefix + " -> " + p.copyIP + p.copyPrefix
				}
				m, ok := found[key]
				if !ok {
					t.Errorf("mirror %s not reported; reported: %v", key, keys(found))
					continue
				}
				// The sequential test decides after 10 matches at the
				// least, on evidence above other_share.
				if m.PathsMatched < 10 || m.Score <= 0.5 {
					t.Errorf("%s: evidence %d/%d (score %.2f) below the decision bar", key, m.PathsMatched, m.PathsCompared, m.Score)
				}
				delete(found, key)
			}
			for k := range found {
				a, b, _ := strings.Cut(k, " -> ")
				if optionalMirror(a, b) {
					delete(found, k)
				}
			}
			if len(found) > 0 {
				t.Errorf("host pairs reported as mirrors that are not: %v", keys(found))
			}

			// No content lost: the pages 127.0.0.3 lacks are fetched and
			// kept on 127.0.0.2 in either order.
			missingOnCopy := 0
			for _, glob := range []string{"sql-*.html", "release-*.html", "catalog-*.html"} {
				files, _ := filepath.Glob(filepath.Join(root, "127.0.0.2", "docs", "15", glob))
				for _, f := range files {
					u := w.URL("127.0.0.2", "/docs/15/"+filepath.Base(f))
					p, ok := pages[u]
					if !ok || p.Status != 200 || (p.Class != "unique" && !isDup(p)) {
						missingOnCopy++
						if missingOnCopy <= 5 {
							t.Errorf("%s (absent from 127.0.0.3) not fetched and kept: %+v", u, p)
						}
					}
				}
			}
			if missingOnCopy > 5 {
				t.Errorf("... %d such pages in all", missingOnCopy)
			}

			// The saving on the side crawled second, and its waste: requests
			// for paths the first side served too (the rest are pages only
			// the second side has, which must be fetched).
			for _, p := range corpusMirrorPairs {
				ip, prefix, ref := p.copyIP, p.copyPrefix, refCopy[p.copyIP]
				firstIP, firstPrefix := p.origIP, p.origPrefix
				if order == "mirror first" {
					ip, prefix, ref = p.origIP, p.origPrefix, refOrig[p.origIP]
					firstIP, firstPrefix = p.copyIP, p.copyPrefix
				}
				got, wasted, picks := 0, 0, 0
				for _, r := range w.Requests()[mark:] {
					if r.Host != ip || !strings.HasPrefix(r.Path, prefix) {
						continue
					}
					got++
					cp := w.URL(firstIP, firstPrefix+strings.TrimPrefix(r.Path, prefix))
					if o, ok := pages[cp]; ok && o.Status == 200 && r.Path != prefix {
						if linkMonitorPick(w.URL(ip, r.Path), cp) {
							picks++
							continue
						}
						wasted++
					}
				}
				// Beyond a handful, only the verification stream (1 in 20 of the
				// URLs the decision skips, fetched on purpose) may repeat pages.
				verified, halted := mirrorProbes(d.Mirrors, ip, prefix)
				t.Logf("%s%s (crawled second): %d requests (%d for paths the other side served, %d of them the verification stream, %d link-monitor picks besides) with mirror handling, %d following every link (%.0f%% saved)",
					ip, prefix, got, wasted, verified, picks, ref, 100*(1-float64(got)/float64(ref)))
				if order == "mirror first" && partialCopies[p.copyIP] {
					// The partial copy was crawled in full before its
					// original was met: the original, crawled second, is
					// fetched from the moment its lacks decide (or
					// reverse) the direction. The price of the direction,
					// measured, not bounded.
					continue
				}
				if halted {
					// Skipping stopped by the loss monitor: the copy is
					// fetched whole from then on, by design (see
					// TestCorpusMirrorPairs). Measured, not bounded.
					continue
				}
				if wasted > 25+verified {
					t.Errorf("%s%s: %d requests for pages the other side already served (%d verification)", ip, prefix, wasted, verified)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestCorpusReportsMirrorsAndReplicatedPrefixes checks the full corpus crawl:
// one mirror per README pair (in the direction the crawl met them), nothing
// else, and the npm versions of 127.0.0.10 as replicated prefixes.
func TestCorpusReportsMirrorsAndReplicatedPrefixes(t *testing.T) {
	c := crawlCorpus(t)
	pairOf := map[string]string{}
	for _, p := range corpusMirrorPairs {
		pairOf[p.origIP+p.origPrefix] = p.copyIP + p.copyPrefix
		pairOf[p.copyIP+p.copyPrefix] = p.origIP + p.origPrefix
	}
	skippedOn := map[string]int{}
	for _, p := range c.report.Pages {
		if p.Class == "mirror_skipped" {
			skippedOn[ipOf(p.Host)]++
		}
	}
	seen := map[string]bool{}
	for _, m := range c.report.Mirrors {
		a, b := ipOf(m.Host)+m.Prefix, ipOf(m.MirrorOf)+m.OriginalPrefix
		// Requests saved are URLs standing skipped, each counted once
		// (not once per link to it, nor after the skip was undone).
		// A direction reversed (docs/MIRRORS.md) leaves the URLs skipped
		// before standing on the original's host.
		skipped := skippedOn[ipOf(m.Host)]
		if m.Swaps > 0 {
			skipped += skippedOn[ipOf(m.MirrorOf)]
		}
		if m.RequestsSaved > skipped {
			t.Errorf("mirror %s: %d requests saved, but only %d URLs of its hosts stand skipped", a, m.RequestsSaved, skipped)
		}
		if pairOf[a] != b && !optionalMirror(a, b) {
			t.Errorf("reported mirror %s -> %s is not a mirror pair of the corpus", a, b)
		}
		seen[a] = true
		seen[b] = true
		// A mirror that saved requests kept a verification stream (the first
		// would-be skip, then 1 in 20, drawn also from the copies skipped
		// while the test ran): the loss monitor watches it. (About 5 picks at
		// 100 skips; fewer may all land on paths the original lacks, which
		// cannot be compared. The git 2.39 builds used to save 181 with none.)
		if m.RequestsSaved >= 100 && m.Verified == 0 {
			t.Errorf("mirror %s saved %d requests without a verification stream", a, m.RequestsSaved)
		}
		t.Logf("mirror %s -> %s: saved %d, verification %d/%d matched (est. %.1f%% of skipped pages differ), gap probes %d (%d new), links %d/%d",
			a, b, m.RequestsSaved, m.VerifyMatched, m.Verified, 100*max(m.DifferRate(), 0), m.GapProbes, m.GapHits,
			m.LinksMatched, m.LinksCompared)
		// Link evidence (path overlap from the duplicate pairs' links) backs
		// every mirror: most of the copies' links map onto their originals'.
		if m.LinksCompared == 0 || 2*m.LinksMatched < m.LinksCompared {
			t.Errorf("mirror %s: link evidence %d of %d links matched", a, m.LinksMatched, m.LinksCompared)
		}
	}
	for _, p := range corpusMirrorPairs {
		if !seen[p.origIP+p.origPrefix] {
			t.Errorf("mirror pair %s%s / %s%s not reported; its candidates:\n%s", p.origIP, p.origPrefix, p.copyIP, p.copyPrefix,
				candidatesOf(t, c.data, p.origIP, p.copyIP))
		}
	}
	npm := 0
	for _, r := range c.report.ReplicatedPrefixes {
		if ipOf(r.Host) == "127.0.0.10" && strings.HasPrefix(r.Prefix, "/npm/v") && strings.HasPrefix(r.OriginalPrefix, "/npm/v") {
			npm++
		}
		if ipOf(r.Host) != ipOf(r.MirrorOf) {
			t.Errorf("replicated prefix across hosts: %+v", r)
		}
	}
	if npm == 0 {
		t.Errorf("the npm versions of 127.0.0.10 are not reported as replicated prefixes: %v", fmt.Sprint(c.report.ReplicatedPrefixes))
	}
}

// candidatesOf lists the stored mirror candidates that involve both ips, to
// say why a pair was not reported.
func candidatesOf(t *testing.T, data, ipA, ipB string) string {
	t.Helper()
	db, err := storage.Open(data, storage.Options{ReadOnly: true})
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var b strings.Builder
	err = db.ForEachEvidence("mirror", func(key string, v []byte) error {
		if strings.Contains(key, "//"+ipA+":") && strings.Contains(key, "//"+ipB+":") {
			b.Write(v)
			b.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return b.String()
}
