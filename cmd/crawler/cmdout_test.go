//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// runOut runs `crawler cmd --out FILE args...` (report, export) and returns
// what it wrote to FILE, and to stderr.
func runOut(t *testing.T, cmd string, args ...string) ([]byte, string) {
	t.Helper()
	b, stderr, err := commandOut(t.TempDir(), cmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	return b, stderr
}

// commandOut is runOut with its file in dir, for callers without a test.
func commandOut(dir, cmd string, args ...string) ([]byte, string, error) {
	out := filepath.Join(dir, cmd+".out")
	var so, se bytes.Buffer
	if err := run(context.Background(), append([]string{cmd, "--out", out}, args...), &so, &se); err != nil {
		return nil, se.String(), fmt.Errorf("%s %v: %v\n%s", cmd, args, err, se.String())
	}
	b, err := os.ReadFile(out)
	return b, se.String(), err
}

// dataArgs is --data DIR for each of dirs.
func dataArgs(dirs ...string) []string {
	var args []string
	for _, d := range dirs {
		args = append(args, "--data", d)
	}
	return args
}

// decodeJSONL decodes each line of b (an export) into a T.
func decodeJSONL[T any](t *testing.T, b []byte) []T {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var recs []T
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", len(recs)+1, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}
