package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultsArePolite(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.Politeness.Delay.D() < time.Second {
		t.Errorf("default delay %s, want >= 1s", c.Politeness.Delay.D())
	}
	if !c.Politeness.ObeyRobots {
		t.Error("robots.txt must be obeyed by default")
	}
	if !strings.Contains(c.Fetch.UserAgent, "Horseshoe") || !strings.Contains(c.Fetch.UserAgent, "http") {
		t.Errorf("user agent %q must name Horseshoe and a URL", c.Fetch.UserAgent)
	}
	if c.Dedup.ShingleWords != 5 || c.Dedup.Samples != 84 || c.Dedup.Filter != "altavista" || c.Dedup.SimhashK != 3 || c.Dedup.Threshold != 0.90 {
		t.Errorf("dedup defaults differ from the seeds: %+v", c.Dedup)
	}
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOverrides(t *testing.T) {
	c, err := Load(write(t, "crawl:\n  workers: 3\npoliteness:\n  delay: 250ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Crawl.Workers != 3 || c.Politeness.Delay.D() != 250*time.Millisecond {
		t.Errorf("overrides not applied: %+v %+v", c.Crawl, c.Politeness)
	}
	if c.Dedup.Samples != 84 {
		t.Errorf("unrelated default lost: samples=%d", c.Dedup.Samples)
	}
}

func TestLoadEmptyFileGivesDefaults(t *testing.T) {
	c, err := Load(write(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if c.Crawl.Workers != Default().Crawl.Workers {
		t.Error("empty file changed defaults")
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := Load(write(t, `
crawl:
  workers: 0
  scope: planet
  deny: ["("]
dedup:
  filter: lycos
  threshold: 0.5
  simhash_weight: idf
  psm_budget: 0
`))
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"crawl.workers", "crawl.scope", "crawl.deny", "dedup.filter", "dedup.threshold",
		"dedup.simhash_weight", "dedup.psm_budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"unknown key":  {"crawl:\n  wrokers: 2\n", "wrokers"},
		"bad duration": {"politeness:\n  delay: soon\n", "not a duration"},
		"not yaml":     {"crawl: [\n", "yaml"},
		"body limit above what one stored value holds": {"fetch:\n  max_body_size: 600000000\n", "fetch.max_body_size"},
		"body limit below a page":                      {"fetch:\n  max_body_size: 100\n", "fetch.max_body_size"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(write(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "cannot read config") {
		t.Errorf("missing file: %v", err)
	}
}

// BPHS's shape is checked only when BPHS is the index: a match within
// simhash_k bits leaves G-k blocks intact, so a table's key may span at most
// that many.
func TestLoadBPHSShape(t *testing.T) {
	if _, err := Load(write(t, "dedup:\n  bphs_header: 9\n")); err != nil {
		t.Errorf("BPHS shape checked while the index is psm: %v", err)
	}
	_, err := Load(write(t, "dedup:\n  simhash_index: bphs\n  bphs_blocks: 4\n  bphs_header: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "dedup.bphs_header") {
		t.Errorf("G=4, g=2, k=3 accepted (want a dedup.bphs_header error): %v", err)
	}
	_, err = Load(write(t, "dedup:\n  simhash_index: bphs\n  bphs_blocks: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "dedup.bphs_blocks") {
		t.Errorf("G=1 accepted (want a dedup.bphs_blocks error): %v", err)
	}
	c, err := Load(write(t, "dedup:\n  simhash_index: bphs\n  bphs_blocks: 5\n  bphs_header: 2\n  psm_budget: 10\n  simhash_weight: tf\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Dedup.BPHSBlocks != 5 || c.Dedup.BPHSHeader != 2 || c.Dedup.PSMBudget != 10 || c.Dedup.SimhashWeight != "tf" {
		t.Errorf("overrides not read: %+v", c.Dedup)
	}
}
