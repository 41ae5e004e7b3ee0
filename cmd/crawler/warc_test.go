//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/warcread"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func TestExportWARC(t *testing.T) {
	body := []byte("<html><p>one two three four five six</p></html>")
	resp := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	req := []byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
	sha := strings.TrimPrefix(export.WARCDigest(body), "sha1:")
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	pages := []storage.Page{
		{ID: 1, URL: "http://a.test/", Class: storage.ClassUnique, Status: 200, FetchedAt: at, SHA1: sha, HasRaw: true},
		{ID: 2, URL: "http://b.test/", Class: storage.ClassExact, OriginalID: 1, DuplicateOf: "http://a.test/", Status: 200, FetchedAt: at, SHA1: sha, HasRaw: true},
		{ID: 3, URL: "http://c.test/", Class: storage.ClassNear, OriginalID: 1, DuplicateOf: "http://a.test/", Similarity: 0.97, Status: 200, FetchedAt: at},
	}
	marshalled, err := yaml.Marshal(configs.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		dups      bool
		config    []byte // stored as metadata "config"
		wantTypes string
		wantInfo  []string
		notInfo   []string
	}{
		{"unique only, no stored config", false, nil, "warcinfo request response",
			[]string{"software: Horseshoe/" + version, "storage-schema: " + storage.SchemaVersion, "crawl-requests: 3", "seed: http://a.test/"},
			[]string{"robots:", "politeness.delay"}},
		{"with duplicates and stored default.yaml", true, configs.DefaultYAML(), "warcinfo request response request revisit metadata",
			[]string{"robots: obey", "http-header-user-agent: Horseshoe/0.1 (+https://github.com/horseshoe-crawler/horseshoe)",
				"politeness.delay: 1s", "crawl.allow: \r\n", "dedup.filter: altavista", "crawl-complete: true"},
			nil},
		{"unique only, stored yaml.Marshal(config)", false, marshalled, "warcinfo request response",
			[]string{"robots: obey", "politeness.delay: 1s", "fetch.max_body_size: 10485760", "storage.keep_raw: true"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := storage.Open(t.TempDir(), storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Update(func(tx *storage.Tx) error {
				for i := range pages {
					if err := tx.PutPage(&pages[i]); err != nil {
						return err
					}
					if pages[i].HasRaw {
						if err := tx.PutRaw(pages[i].ID, req, resp); err != nil {
							return err
						}
					}
				}
				for _, m := range [][2]string{{"requests", "3"}, {"complete", "true"}, {"seeds", "http://a.test/"}} {
					if err := tx.PutMeta(m[0], []byte(m[1])); err != nil {
						return err
					}
				}
				if tc.config != nil {
					return tx.PutMeta(storage.MetaConfig, tc.config)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			n, err := session.ExportWARC(db, &buf, export.WARCOptions{IncludeDuplicates: tc.dups, Software: "Horseshoe/" + version}, "")
			if err != nil {
				t.Fatal(err)
			}
			recs, err := warcread.Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, r := range recs {
				types = append(types, r.Type())
			}
			if got := strings.Join(types, " "); got != tc.wantTypes || n != len(recs) {
				t.Errorf("records %q (n=%d), want %q", got, n, tc.wantTypes)
			}
			info := string(recs[0].Block)
			for _, s := range tc.wantInfo {
				if !strings.Contains(info, s) {
					t.Errorf("warcinfo lacks %q:\n%s", s, info)
				}
			}
			for _, s := range tc.notInfo {
				if strings.Contains(info, s) {
					t.Errorf("warcinfo has %q:\n%s", s, info)
				}
			}
		})
	}
}

// TestCorpusWARCExport exports the crawl of the real corpus and checks the
// WARC against the store: one response per unique page with a raw exchange,
// each with the page's payload digest, one revisit or metadata record per
// duplicate, and (when warcio is available) that warcio reads every record.
func TestCorpusWARCExport(t *testing.T) {
	c := crawlCorpus(t)
	db, err := storage.Open(c.data, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	path := filepath.Join(t.TempDir(), "corpus.warc.gz")
	cdxPath := filepath.Join(t.TempDir(), "corpus.cdxj")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := session.ExportWARC(db, f, export.WARCOptions{IncludeDuplicates: true, Software: "Horseshoe/" + version, Filename: "corpus.warc.gz"}, cdxPath)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	wantSHA := map[string]string{} // target URI of a unique page -> payload digest
	var uniques, dups int
	err = db.ForEachPage(func(p *storage.Page) error {
		switch {
		case p.Class == storage.ClassUnique && p.HasRaw:
			u := p.URL
			if p.FinalURL != "" {
				u = p.FinalURL
			}
			wantSHA[u] = "sha1:" + p.SHA1
			uniques++
		case p.Class == storage.ClassExact || p.Class == storage.ClassNear:
			dups++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if uniques == 0 || dups == 0 {
		t.Fatalf("corpus crawl has %d unique pages with raw data and %d duplicates; the test needs both", uniques, dups)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := warcread.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for i := range recs {
		r := &recs[i]
		count[r.Type()]++
		if r.Type() != "response" {
			continue
		}
		uri := r.Get("WARC-Target-URI")
		_, payload, err := r.HTTPPayload()
		if err != nil {
			t.Fatalf("response %s: %v", uri, err)
		}
		if got := export.WARCDigest(payload); got != wantSHA[uri] || r.Get("WARC-Payload-Digest") != got {
			t.Errorf("response %s: payload %s, header %s, page %s", uri, got, r.Get("WARC-Payload-Digest"), wantSHA[uri])
		}
	}
	if n != len(recs) || count["warcinfo"] != 1 || count["response"] != uniques ||
		count["request"] != uniques+count["revisit"] || count["revisit"]+count["metadata"] != dups {
		t.Errorf("records %v (n=%d), want %d responses and %d duplicates", count, n, uniques, dups)
	}
	t.Logf("corpus WARC: %d bytes, records %v", len(data), count)

	bin := testtools.Warcio(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "index", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("warcio index: %v\n%s", err, stderr.String())
	}
	if lines := strings.Count(stdout.String(), "\n"); lines != n {
		t.Errorf("warcio index lists %d records, we wrote %d", lines, n)
	}

	// The CDXJ index written beside the WARC is warcio's cdx-index of it, sorted.
	stdout.Reset()
	cmd = exec.Command(bin, "cdx-index", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("warcio cdx-index: %v\n%s", err, stderr.String())
	}
	theirs := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	slices.Sort(theirs)
	cdx, err := os.ReadFile(cdxPath)
	if err != nil {
		t.Fatal(err)
	}
	ours := strings.Split(strings.TrimSpace(string(cdx)), "\n")
	if want := count["response"] + count["revisit"] + count["metadata"]; len(ours) != want || len(theirs) != want {
		t.Fatalf("CDXJ: %d lines, warcio %d, want %d", len(ours), len(theirs), want)
	}
	diff := 0
	for i := range ours {
		if ours[i] != theirs[i] {
			if diff++; diff <= 5 {
				t.Errorf("CDXJ line %d:\nours   %s\nwarcio %s", i, ours[i], theirs[i])
			}
		}
	}
	t.Logf("CDXJ: %d lines, %d differ from warcio's", len(ours), diff)
}

// TestExportCDXFlag: `export --format warc --cdx` writes the index naming the WARC file;
// --cdx without a WARC file to name is a usage error.
func TestExportCDXFlag(t *testing.T) {
	fps := []storage.Page{{ID: 1, URL: "http://www.a.test/x?b=1&a=2", Class: storage.ClassUnique, Status: 200,
		FetchedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), HasRaw: true}}
	data := t.TempDir()
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *storage.Tx) error {
		if err := tx.PutPage(&fps[0]); err != nil {
			return err
		}
		return tx.PutRaw(1, []byte("GET /x?b=1&a=2 HTTP/1.1\r\nHost: www.a.test\r\n\r\n"),
			[]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhello"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, cdx := filepath.Join(dir, "site.warc.gz"), filepath.Join(dir, "site.cdxj")
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"export", "--data", data, "--format", "warc", "--out", out, "--cdx", cdx}, &so, &se); err != nil {
		t.Fatalf("export: %v\n%s", err, se.String())
	}
	got, err := os.ReadFile(cdx)
	if err != nil {
		t.Fatal(err)
	}
	warc, _ := os.ReadFile(out)
	line := strings.TrimSpace(string(got))
	if !strings.HasPrefix(line, "test,a)/x?a=2&b=1 20260102030405 {") || !strings.Contains(line, `"filename":"site.warc.gz"`) ||
		strings.Count(string(got), "\n") != 1 || len(warc) == 0 {
		t.Errorf("CDXJ:\n%s", got)
	}
	for _, args := range [][]string{
		{"export", "--data", data, "--format", "jsonl", "--out", filepath.Join(dir, "x.jsonl"), "--cdx", cdx},
		{"export", "--data", data, "--format", "warc", "--out", "-", "--cdx", cdx},
	} {
		err := run(context.Background(), args, &so, &se)
		if err == nil || !strings.Contains(err.Error(), "--cdx needs") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
