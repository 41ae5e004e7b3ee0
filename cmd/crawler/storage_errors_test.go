//go:build e2e

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// snapshot hashes every file under dir.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runBin runs the crawler binary and returns its exit code and stderr.
func runBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), errOut.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, errOut.String()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("crawler %v did not finish within 60s", args)
		return -1, ""
	}
}

// oneLine returns the error line: the last stderr line, the only one that
// starts with "crawler: " (log lines before it are allowed).
func oneLine(t *testing.T, stderr string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "crawler: ") {
			n++
		} else if !strings.HasPrefix(l, "time=") {
			t.Fatalf("stderr line that is neither a log line nor the error: %q", l)
		}
	}
	if n != 1 || !strings.HasPrefix(last, "crawler: ") {
		t.Fatalf("want exactly one error line starting with 'crawler: ', last; got %q", stderr)
	}
	return last
}

// TestCorruptDataDir: a data dir whose Badger manifest is damaged stops the
// crawl with one clear line and exit 1, and nothing in it is changed.
func TestCorruptDataDir(t *testing.T) {
	bin := buildSignalCrawler(t)
	data := crawledDemo(t, bin)
	manifest := filepath.Join(data, "MANIFEST")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for i := 8; i < len(b) && i < 64; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, data)
	code, stderr := runBin(t, bin, "crawl", "--data", data, "--delay", "0", "--quiet")
	line := oneLine(t, stderr)
	if code != 1 || !strings.Contains(line, data) {
		t.Errorf("corrupt data dir: exit %d, %q; want exit 1 naming the data dir", code, line)
	}
	if after := snapshot(t, data); len(after) != len(before) {
		t.Errorf("files in the data dir changed: %d before, %d after", len(before), len(after))
	} else {
		for p, h := range before {
			if after[p] != h {
				t.Errorf("%s was modified", p)
			}
		}
	}
}

// TestDiskFull: a crawl whose data dir runs short of space stops with one
// clear line and exit 1 (Badger writes through memory-mapped files, where a
// full disk would be a crash, so the store stops below storage.min_free_bytes);
// what it recorded still opens and reports.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=100m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v %s", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
	bin := buildSignalCrawler(t)
	root := corpusRoot(t)
	w, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("storage:\n  min_free_bytes: 83886080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(mnt, "data")
	code, stderr := runBin(t, bin, "crawl", "--config", cfg, "--data", data, "--delay", "0", "--quiet",
		w.URL("127.0.0.15", "/reference/"), w.URL("127.0.0.2", "/docs/15/"), w.URL("127.0.0.7", "/manual/"))
	line := oneLine(t, stderr)
	if code != 1 || !strings.Contains(line, "no space left on device") || !strings.Contains(line, data) {
		t.Fatalf("disk short of space: exit %d, %q; want exit 1 saying no space is left in the data dir", code, line)
	}
	t.Logf("stopped: %s", line)
	out := filepath.Join(t.TempDir(), "r.json")
	if rcode, rerr := runBin(t, bin, "report", "--data", data, "--format", "json", "--out", out); rcode != 0 {
		t.Fatalf("reading the store after the stop: exit %d, %q", rcode, rerr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(b, []byte(`"unique"`)) {
		t.Fatalf("report after the stop has no pages: %v", err)
	}
	_ = context.Background
}
