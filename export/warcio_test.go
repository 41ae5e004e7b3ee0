//go:build e2e

package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The checks below read our WARC files with warcio 2.4.11 (webrecorder's
// JavaScript WARC library), an independent reader. The tool is found through
// $HORSESHOE_WARCIO (the path of its warcio command) or installed by
// scripts/install-test-deps.sh into a cache directory outside the repository.

// warcioRun runs the warcio command and returns its stdout; anything on
// stderr (warcio warns there about malformed records) fails the test.
func warcioRun(tb testing.TB, bin string, args ...string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("warcio %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		tb.Errorf("warcio %s wrote to stderr:\n%s", args[0], s)
	}
	return stdout.Bytes()
}

// verifyScript reads a WARC with warcio's WARCParser twice: once without
// HTTP parsing (the whole block, for WARC-Block-Digest) and once with it (the
// HTTP payload, for WARC-Payload-Digest), and prints one JSON object per
// record with the SHA-1 digests it computed.
const verifyScript = `
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [bin, file] = process.argv.slice(2);
const pkg = dirname(dirname(realpathSync(bin))); // .../warcio/dist/cli.js -> .../warcio
const { WARCParser } = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(buf) {
  let bits = 0, value = 0, out = "";
  for (const b of buf) {
    value = (value << 8) | b; bits += 8;
    while (bits >= 5) { out += alphabet[(value >>> (bits - 5)) & 31]; bits -= 5; }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}
const sha1 = (b) => "sha1:" + base32(createHash("sha1").update(b).digest());

const blocks = [];
for await (const rec of new WARCParser(createReadStream(file), { parseHttp: false })) {
  blocks.push(sha1(await rec.readFully()));
}
let i = 0;
for await (const rec of new WARCParser(createReadStream(file))) {
  const payload = rec.httpHeaders && rec.warcType !== "revisit" ? sha1(await rec.readFully(false)) : "";
  console.log(JSON.stringify({
    type: rec.warcType, uri: rec.warcTargetURI || "", block: blocks[i++], payload,
    status: rec.httpHeaders && rec.warcType !== "request" ? rec.httpHeaders.statusCode : 0,
  }));
}
if (i !== blocks.length) throw new Error("record counts differ: " + i + " vs " + blocks.length);
`

// fillStore writes the fixture pages into a real crawl store.
func fillStore(tb testing.TB, fps []fixturePage) *storage.DB {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *storage.Tx) error {
		for i := range fps {
			if err := tx.PutPage(&fps[i].page); err != nil {
				return err
			}
			if fps[i].page.HasRaw {
				if err := tx.PutRaw(fps[i].page.ID, fps[i].request, fps[i].resp); err != nil {
					return err
				}
			}
		}
		return tx.PutMeta("seeds", []byte("http://a.test/\nhttp://mirror.test/"))
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func TestWARCWithWarcio(t *testing.T) {
	bin := testtools.Warcio(t)
	fps := fixture()
	db := fillStore(t, fps)
	path := filepath.Join(t.TempDir(), "crawl.warc.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := WARC(f, db, WARCOptions{IncludeDuplicates: true, Software: "Horseshoe/test"})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := readWARC(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := wantRecords(true)
	if n != len(ours) || n != len(want) {
		t.Fatalf("wrote %d records, read back %d, want %d", n, len(ours), len(want))
	}
	members := gzipMembers(t, data)
	if len(members) != n {
		t.Fatalf("%d gzip members for %d records", len(members), n)
	}
	memberLen := func(i int) int {
		if i+1 < len(members) {
			return members[i+1] - members[i]
		}
		return len(data) - members[i]
	}

	t.Run("index", func(t *testing.T) {
		fields := []string{"offset", "length", "warc-type", "warc-target-uri", "warc-record-id", "warc-date",
			"warc-concurrent-to", "warc-block-digest", "warc-payload-digest", "content-length", "content-type",
			"warc-refers-to", "warc-refers-to-target-uri", "warc-refers-to-date", "warc-profile", "warc-warcinfo-id"}
		out := warcioRun(t, bin, "index", path, "--fields="+strings.Join(fields, ","))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != n {
			t.Fatalf("warcio index lists %d records, we wrote %d:\n%s", len(lines), n, out)
		}
		for i, line := range lines {
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("line %d: %v", i, err)
			}
			r := &ours[i]
			for _, fld := range fields {
				var wantV string
				switch fld {
				case "offset":
					wantV = strconv.Itoa(members[i])
				case "length":
					wantV = strconv.Itoa(memberLen(i))
				default:
					wantV = r.Get(fld)
				}
				gotV := ""
				if v, ok := got[fld]; ok {
					gotV = fmt.Sprint(v)
				}
				if gotV != wantV {
					t.Errorf("record %d (%s): warcio %s = %q, we wrote %q", i, r.Type(), fld, gotV, wantV)
				}
			}
			if r.Type() != want[i].typ || r.Get("WARC-Target-URI") != want[i].uri {
				t.Errorf("record %d: %s %s, want %s %s", i, r.Type(), r.Get("WARC-Target-URI"), want[i].typ, want[i].uri)
			}
		}
	})

	t.Run("cdx-index", func(t *testing.T) {
		out := warcioRun(t, bin, "cdx-index", path)
		// warcio's CDX lists responses, revisits and (non warc-fields)
		// metadata records, one line each: "urlkey timestamp {json}".
		var wantIdx []int
		for i := range ours {
			switch ours[i].Type() {
			case "response", "revisit", "metadata":
				wantIdx = append(wantIdx, i)
			}
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(wantIdx) {
			t.Fatalf("warcio cdx-index gave %d lines, want %d:\n%s", len(lines), len(wantIdx), out)
		}
		for k, line := range lines {
			parts := strings.SplitN(line, " ", 3)
			if len(parts) != 3 {
				t.Fatalf("cdxj line %q", line)
			}
			var got struct {
				URL, Mime, Status, Digest, Length, Offset string
			}
			if err := json.Unmarshal([]byte(parts[2]), &got); err != nil {
				t.Fatalf("cdxj line %q: %v", line, err)
			}
			i := wantIdx[k]
			r := &ours[i]
			date, _ := time.Parse(time.RFC3339Nano, r.Get("WARC-Date"))
			wantMime, wantStatus := "text/html", "200"
			switch r.Type() {
			case "revisit":
				wantMime = "warc/revisit"
			case "metadata":
				wantMime, wantStatus = "application/json", ""
			}
			wantDigest := strings.TrimPrefix(r.Get("WARC-Payload-Digest"), "sha1:")
			for _, c := range []struct{ name, got, want string }{
				{"timestamp", parts[1], date.Format("20060102150405")},
				{"url", got.URL, r.Get("WARC-Target-URI")},
				{"mime", got.Mime, wantMime},
				{"status", got.Status, wantStatus},
				{"digest", got.Digest, wantDigest},
				{"offset", got.Offset, strconv.Itoa(members[i])},
				{"length", got.Length, strconv.Itoa(memberLen(i))},
			} {
				if c.got != c.want {
					t.Errorf("cdx line %d (%s %s): %s = %q, want %q", k, r.Type(), got.URL, c.name, c.got, c.want)
				}
			}
		}
	})

	t.Run("digests", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "verify.mjs")
		if err := os.WriteFile(script, []byte(verifyScript), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "node", script, bin, path).CombinedOutput()
		if err != nil {
			t.Fatalf("node verify: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != n {
			t.Fatalf("warcio parsed %d records, we wrote %d:\n%s", len(lines), n, out)
		}
		sha1Of := map[string]string{} // target URI -> Page.SHA1
		for _, fp := range fps {
			sha1Of[targetURI(&fp.page)] = "sha1:" + fp.page.SHA1
		}
		for i, line := range lines {
			var got struct {
				Type, URI, Block, Payload string
				Status                    int
			}
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			r := &ours[i]
			if got.Type != r.Type() || got.URI != r.Get("WARC-Target-URI") {
				t.Errorf("record %d: warcio sees %s %s, we wrote %s %s", i, got.Type, got.URI, r.Type(), r.Get("WARC-Target-URI"))
			}
			if got.Block != r.Get("WARC-Block-Digest") {
				t.Errorf("record %d (%s): block hashes to %s in warcio, header says %s", i, r.Type(), got.Block, r.Get("WARC-Block-Digest"))
			}
			if r.Type() == "response" {
				if got.Payload != r.Get("WARC-Payload-Digest") || got.Payload != sha1Of[got.URI] || got.Status != 200 {
					t.Errorf("response %s: warcio payload %s status %d, header %s, page %s",
						got.URI, got.Payload, got.Status, r.Get("WARC-Payload-Digest"), sha1Of[got.URI])
				}
			}
			if r.Type() == "revisit" && got.Status != 200 {
				t.Errorf("revisit %s: warcio reads HTTP status %d from its header block", got.URI, got.Status)
			}
		}
	})
}
