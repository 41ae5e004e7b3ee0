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

// corpus returns the unpacked shared corpus or skips the test.
func corpus(tb testing.TB) (string, []ManifestEntry) {
	tb.Helper()
	return NeedCorpus(tb)
}

func TestCorpus(t *testing.T) {
	root, manifest := corpus(t)
	if len(manifest) != 15 {
		t.Fatalf("manifest has %d entries, want 15", len(manifest))
	}
	if got := manifest[0]; got.Host != "127.0.0.2" || got.Prefix != "/docs/15/" || !strings.Contains(got.What, "distinct") {
		t.Errorf("manifest[0] = %+v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "127.0.0.2", "docs", "15", "index.html")); err != nil {
		t.Errorf("corpus lacks 127.0.0.2/docs/15/index.html: %v", err)
	}
	again, _, err := Corpus()
	if err != nil || again != root {
		t.Errorf("second Corpus() = %q, %v; want the cached %q", again, err, root)
	}
}

// TestServeCorpus serves the real corpus and fetches every manifest prefix.
func TestServeCorpus(t *testing.T) {
	root, manifest := corpus(t)
	w, err := Start(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := newClient(t)
	for _, e := range manifest {
		r := do(t, c, "GET", w.URL(e.Host, e.Prefix))
		if r.status != 200 || !strings.Contains(strings.ToLower(r.body), "<a href") {
			t.Errorf("%s%s: status %d, %d bytes", e.Host, e.Prefix, r.status, len(r.body))
		}
	}
	// Directory listings where the manifest says there is no index.html.
	if r := do(t, c, "GET", w.URL("127.0.0.10", "/npm/")); !strings.Contains(r.body, `<a href="v10.9.1/">v10.9.1/</a>`) {
		t.Errorf("npm listing lacks v10.9.1/:\n%s", r.body)
	}
	// Symbolic links are exact duplicates, served by following the link.
	en := do(t, c, "GET", w.URL("127.0.0.7", "/manual/en/suexec.html"))
	ptbr := do(t, c, "GET", w.URL("127.0.0.7", "/manual/pt-br/suexec.html"))
	if en.status != 200 || ptbr.status != 200 || en.body != ptbr.body {
		t.Errorf("pt-br/suexec.html (%d, %d bytes) != en/suexec.html (%d, %d bytes)", ptbr.status, len(ptbr.body), en.status, len(en.body))
	}
	if r := do(t, c, "GET", w.URL("127.0.0.2", "/docs/15")); r.status != 301 || r.header.Get("Location") != "/docs/15/" {
		t.Errorf("/docs/15: %d %q", r.status, r.header.Get("Location"))
	}
}

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
	writeTree(t, shared, map[string]string{"corpus/web-test.tar.xz": "x"})
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
	writeTree(t, src, map[string]string{"127.0.0.2/a/index.html": "hello", "127.0.0.2/a/b.html": "->index.html"})
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
