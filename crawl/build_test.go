package crawl_test

import (
	"errors"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Build refuses what the configuration gets wrong as a ConfigError, a spent
// budget as ErrBudgetSpent, and builds the rest; the address policy is
// checked only when one is given.
func TestBuild(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seeds := []string{"http://a.test/"}

	cfg := configs.Default()
	cfg.Crawl.Scope = "planet" // Validate would refuse it; Build must too
	if _, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds}, nil); !crawl.IsConfigError(err) {
		t.Errorf("bad scope: %v, want a ConfigError", err)
	}
	cfg = configs.Default()
	cfg.Crawl.Scope = "host"
	if _, err := crawl.Build(cfg, db, crawl.Env{}, nil); !crawl.IsConfigError(err) {
		t.Errorf("host scope without seeds: %v, want a ConfigError", err)
	}
	cfg.Crawl.MaxPages = 10
	if _, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds, PagesSpent: 10}, nil); !errors.Is(err, crawl.ErrBudgetSpent) {
		t.Errorf("budget spent: %v, want ErrBudgetSpent", err)
	}
	c, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds, PagesSpent: 9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	if o := crawl.FetchOptions(cfg.Fetch, crawl.Env{}); o.DenyPrivate || !o.NoFollowRedirects {
		t.Errorf("no policy: DenyPrivate %v, NoFollowRedirects %v; want false, true", o.DenyPrivate, o.NoFollowRedirects)
	}
	p := fetch.AddrPolicy{AllowPrivate: true}
	if o := crawl.FetchOptions(cfg.Fetch, crawl.Env{Policy: &p}); !o.DenyPrivate || !o.Policy.AllowPrivate {
		t.Errorf("policy given: DenyPrivate %v, policy %+v", o.DenyPrivate, o.Policy)
	}
}
