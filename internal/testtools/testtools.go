// Package testtools finds the tools from outside Go that the tests use
// (node, the npm packages warcio and playwright-core), installed by the
// scripts in scripts/ and by .ci/run. A test whose tool is missing is skipped
// with a message, except under CI, where .ci/run installs every tool and a
// missing one is a failure.
package testtools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Require does nothing when ok. Otherwise it fails tb under CI (CI=true, as
// .ci/run sets it: CI has every tool and the corpus), and skips it elsewhere,
// with one line: what is missing and how to get it.
//
//	testtools.Require(t, err == nil, "wget: "+err.Error(), "apt-get install wget (or make test-deps)")
func Require(tb testing.TB, ok bool, what, how string) {
	tb.Helper()
	if ok {
		return
	}
	if CI() {
		tb.Fatalf("CI must have this: %s; get it: %s", what, how)
	}
	tb.Skipf("missing %s; get it: %s", what, how)
}

// CI reports whether the tests run under CI (the environment variable CI is
// "true"), where a missing tool or corpus is a failure, not a skip.
func CI() bool { return os.Getenv("CI") == "true" }

// Node returns the path of node.
func Node(tb testing.TB) string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Require(tb, false, "node ("+err.Error()+")", "apt-get install nodejs npm (or make test-deps)")
	}
	return node
}

// Installed returns the path that the environment variable env names, or
// else the last line that the repository's scripts/<script> prints (the
// script installs the tool into a cache outside the repository).
func Installed(tb testing.TB, env, script string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	root, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(root, "scripts", script)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		Require(tb, false, fmt.Sprintf("%s (%s failed: %v: %s)", env, path, err, lastLine(stderr.String())), "bash "+filepath.Join("scripts", script)+" (needs npm and the network), or set "+env)
	}
	out := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return out
}

// Warcio returns the warcio command (node and the npm package warcio, from
// $HORSESHOE_WARCIO or scripts/install-test-deps.sh).
func Warcio(tb testing.TB) string {
	tb.Helper()
	Node(tb)
	bin := Installed(tb, "HORSESHOE_WARCIO", "install-test-deps.sh")
	if _, err := os.Stat(bin); err != nil {
		Require(tb, false, "warcio ("+err.Error()+")", "bash scripts/install-test-deps.sh (or make test-deps), or set HORSESHOE_WARCIO")
	}
	return bin
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// repoRoot walks up from the working directory to the directory of go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
