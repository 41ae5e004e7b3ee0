//go:build e2e

package testweb

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
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
	w, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)
	do := func(t *testing.T, c *http.Client, method, url string) response {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{resp.StatusCode, resp.Header, string(b)}
	}
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

type response struct {
	status int
	header http.Header
	body   string
}
