package testweb

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name, in string
		want     []ManifestEntry
		wantErr  bool
	}{
		{"comments and blanks", "#host\turl_prefix\twhat\n\n127.0.0.2\t/docs/\tdistinct pages\r\n", []ManifestEntry{{"127.0.0.2", "/docs/", "distinct pages"}}, false},
		{"no description", "127.0.0.9\t/\n", []ManifestEntry{{"127.0.0.9", "/", ""}}, false},
		{"tabs in description", "127.0.0.3\t/a/\tx\ty\n", []ManifestEntry{{"127.0.0.3", "/a/", "x\ty"}}, false},
		{"one field", "127.0.0.2\n", nil, true},
		{"relative prefix", "127.0.0.2\tdocs/\tx\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseManifest(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestFindShared(t *testing.T) {
	t.Setenv(SharedEnv, t.TempDir())
	if _, err := findShared(); !errors.Is(err, ErrNoCorpus) {
		t.Errorf("findShared with an empty $%s: %v, want ErrNoCorpus", SharedEnv, err)
	}
	shared := t.TempDir()
	testtools.WriteTree(t, shared, map[string]string{"corpus/web-test.tar.xz": "x"})
	t.Setenv(SharedEnv, shared)
	if got, err := findShared(); err != nil || got != shared {
		t.Errorf("findShared = %q, %v; want %q", got, err, shared)
	}
}

// TestUnpackRace has several unpackers race for one destination: all
// succeed, the result is complete and no temporary directory is left.
func TestUnpackRace(t *testing.T) {
	_, err := exec.LookPath("xz")
	testtools.Require(t, err == nil, "xz", "apt-get install xz-utils (or make test-deps)")
	src, work := t.TempDir(), t.TempDir()
	testtools.WriteTree(t, src, map[string]string{"127.0.0.2/a/index.html": "hello", "127.0.0.2/a/b.html": "->index.html"})
	tarball := filepath.Join(work, "t.tar.xz")
	if out, err := exec.Command("tar", "-cJf", tarball, "-C", src, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	dst := filepath.Join(work, "corpus")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = unpack(tarball, dst)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dst, "127.0.0.2", "a", "b.html"))
	if err != nil || !bytes.Equal(b, []byte("hello")) {
		t.Errorf("unpacked link = %q, %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(work, "corpus.tmp-*"))
	if len(left) != 0 {
		t.Errorf("temporary directories left: %v", left)
	}
	if err := unpack(filepath.Join(work, "absent.tar.xz"), filepath.Join(work, "other")); err == nil {
		t.Error("unpacking a missing tarball succeeded")
	}
}
