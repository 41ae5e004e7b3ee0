package testweb

import (
	"errors"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

// HowCorpus is how to get the shared corpus.
const HowCorpus = "put the shared directory (corpus/web-test.tar.xz, MANIFEST.tsv) at ../shared beside the clone, or set " + SharedEnv + "=DIR"

// NeedCorpus returns Corpus(). Without the corpus it skips tb, or fails it
// under CI (testtools.Require); any other error fails tb.
func NeedCorpus(tb testing.TB) (root string, manifest []ManifestEntry) {
	tb.Helper()
	root, manifest, err := Corpus()
	RequireCorpus(tb, err)
	return root, manifest
}

// RequireCorpus skips tb (fails it under CI) when err says the corpus is
// missing, fails it on any other error, and does nothing when err is nil.
func RequireCorpus(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrNoCorpus) {
		testtools.Require(tb, false, "the real corpus ("+err.Error()+")", HowCorpus)
		return
	}
	tb.Fatal(err)
}
