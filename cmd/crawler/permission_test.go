//go:build e2e

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPermissionDenied: a data dir the crawler may not read or write stops
// the crawl with one clear line naming it and exit 1, and nothing in it
// changes. Root ignores permissions, so as root the crawler runs as nobody
// (uid 65534) against a data dir that only root may enter.
func TestPermissionDenied(t *testing.T) {
	bin := buildSignalCrawler(t)
	data := crawledDemo(t, bin)
	before := snapshot(t, data)

	// A copy of the binary anyone may run, in a directory anyone may enter.
	pub, err := os.MkdirTemp("", "horseshoe-pub-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	if err := os.Chmod(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	pubBin := filepath.Join(pub, "crawler")
	if err := os.WriteFile(pubBin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pubBin, "crawl", "--data", data, "--delay", "0", "--quiet")
	cmd.Dir = pub
	if os.Geteuid() == 0 {
		if err := os.Chmod(data, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Env = append(os.Environ(), "HOME="+pub)
	} else {
		if err := os.Chmod(data, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(data, 0o700)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	line := oneLine(t, errOut.String())
	if code != 1 || !strings.Contains(line, data) || !strings.Contains(strings.ToLower(line), "permission denied") {
		t.Errorf("data dir without permission: exit %d, %q; want exit 1 naming the data dir and the denial", code, line)
	} else {
		t.Logf("as %s: %s", map[bool]string{true: "nobody", false: "owner, mode 000"}[os.Geteuid() == 0], line)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, data)
	if len(after) != len(before) {
		t.Errorf("files in the data dir changed: %d before, %d after", len(before), len(after))
	}
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s was modified", p)
		}
	}
}
