// Package testweb holds the test fixtures around the loopback web
// (internal/loopweb): the shared corpus (Corpus, NeedCorpus: the real
// 8,000-page web in ../shared, unpacked once) and the mirror chain. Only tests
// and benchmarks link it.
package testweb

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoCorpus reports that the shared corpus tarball was not found. Tests
// that need it skip when errors.Is(err, ErrNoCorpus).
var ErrNoCorpus = errors.New("testweb: shared corpus not found (set HORSESHOE_SHARED to the shared directory)")

// SharedEnv names the environment variable holding the shared directory
// (the one with corpus/web-test.tar.xz inside).
const SharedEnv = "HORSESHOE_SHARED"

const (
	corpusTarball  = "web-test.tar.xz"
	corpusManifest = "MANIFEST.tsv"
)

// ManifestEntry is one line of the corpus MANIFEST.tsv: a host, a URL prefix
// on it, and the duplicate phenomenon found there.
type ManifestEntry struct {
	Host, Prefix, What string
}

// Corpus returns the directory holding the unpacked shared corpus (one
// sub-directory per host, ready for Start) and its manifest.
//
// The tarball is unpacked once into os.TempDir()/horseshoe-corpus-<12 hex
// digits of its SHA-256>; concurrent callers, in one process or several,
// each unpack into a private temporary directory and rename it into place,
// so the cache directory only ever appears complete.
func Corpus() (root string, manifest []ManifestEntry, err error) {
	shared, err := findShared()
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(shared, "corpus")
	manifest, err = readManifest(filepath.Join(dir, corpusManifest))
	if err != nil {
		return "", nil, err
	}
	tarball := filepath.Join(dir, corpusTarball)
	sum, err := fileSHA256(tarball)
	if err != nil {
		return "", nil, err
	}
	root = filepath.Join(os.TempDir(), "horseshoe-corpus-"+sum[:12])
	if fi, err := os.Stat(root); err == nil && fi.IsDir() {
		return root, manifest, nil
	}
	if err := unpack(tarball, root); err != nil {
		return "", nil, err
	}
	return root, manifest, nil
}

// findShared locates the shared directory: $HORSESHOE_SHARED, else the first
// shared/ or ../shared/ holding the corpus while walking up from the working
// directory.
func findShared() (string, error) {
	if dir := os.Getenv(SharedEnv); dir != "" {
		if hasCorpus(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w: $%s=%s has no corpus/%s", ErrNoCorpus, SharedEnv, dir, corpusTarball)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testweb: working directory: %w", err)
	}
	for d := wd; ; {
		for _, c := range []string{filepath.Join(d, "shared"), filepath.Join(d, "..", "shared")} {
			if hasCorpus(c) {
				return filepath.Clean(c), nil
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", fmt.Errorf("%w: no shared/corpus/%s above %s", ErrNoCorpus, corpusTarball, wd)
}

func hasCorpus(shared string) bool {
	fi, err := os.Stat(filepath.Join(shared, "corpus", corpusTarball))
	return err == nil && fi.Mode().IsRegular()
}

// readManifest parses MANIFEST.tsv: tab-separated host, prefix and
// description; lines starting with # and blank lines are skipped.
func readManifest(name string) ([]ManifestEntry, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("testweb: open manifest: %w", err)
	}
	defer f.Close()
	return parseManifest(f)
}

func parseManifest(r io.Reader) ([]ManifestEntry, error) {
	var out []ManifestEntry
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) < 2 || fields[0] == "" || !strings.HasPrefix(fields[1], "/") {
			return nil, fmt.Errorf("testweb: manifest line %d: want host<TAB>/prefix<TAB>description, got %q", n, line)
		}
		e := ManifestEntry{Host: fields[0], Prefix: fields[1]}
		if len(fields) == 3 {
			e.What = fields[2]
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("testweb: read manifest: %w", err)
	}
	return out, nil
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("testweb: open corpus: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("testweb: hash corpus: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// unpack extracts tarball with tar -xJf into a fresh temporary directory
// next to dst and renames it to dst. Losing a race to another unpacker is
// not an error.
func unpack(tarball, dst string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-")
	if err != nil {
		return fmt.Errorf("testweb: corpus temp dir: %w", err)
	}
	out, err := exec.Command("tar", "-xJf", tarball, "-C", tmp).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("testweb: unpack corpus: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("testweb: corpus dir mode: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		if fi, serr := os.Stat(dst); serr == nil && fi.IsDir() {
			return nil // another process finished first
		}
		return fmt.Errorf("testweb: install corpus: %w", err)
	}
	return nil
}
