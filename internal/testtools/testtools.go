// Package testtools finds the tools from outside Go that the tests use
// (node, the npm packages warcio and playwright-core), installed by the
// scripts in scripts/ and by .ci/run. A test whose tool is missing is skipped
// with a message, except under CI, where .ci/run installs every tool and a
// missing one is a failure.
package testtools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Missing skips tb, or fails it when CI is set.
func Missing(tb testing.TB, format string, a ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("CI must have this tool: "+format, a...)
	}
	tb.Skipf("skipped, a tool is missing: "+format, a...)
}

// Node returns the path of node.
func Node(tb testing.TB) string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Missing(tb, "node is not installed: %v", err)
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
		Missing(tb, "%s failed (%v); set %s instead:\n%s", path, err, env, stderr.String())
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
		Missing(tb, "warcio at %q: %v", bin, err)
	}
	return bin
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
