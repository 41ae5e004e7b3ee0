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

// Decoding reports every unknown key and every value of the wrong type at
// once, each at its line and column and by its full key; values are not
// checked here (crawl.Validate does).
func TestLoadReportsEveryDecodingError(t *testing.T) {
	_, err := Load(write(t, `crawl:
  wrokers: 2
  max_pages: many
politeness:
  delay: soon
  obey_robots: maybe
dedup:
  samples: [1, 2]
cache:
  size: 1
`))
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{
		"line 2, column 3: unknown key crawl.wrokers",
		"line 3, column 14: crawl.max_pages: want a whole number, got \"many\"",
		"line 5, column 10: politeness.delay: \"soon\" is not a duration",
		"line 6, column 16: politeness.obey_robots: want true or false, got \"maybe\"",
		"line 8, column 12: dedup.samples: want a whole number",
		"line 9, column 1: unknown key cache",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 6 {
		t.Errorf("%d errors, want 6:\n%v", n, err)
	}
}

// Values are the stages' to check: Load decodes an out-of-range value as is.
func TestLoadDoesNotValidate(t *testing.T) {
	c, err := Load(write(t, "crawl:\n  workers: 0\ndedup:\n  shingle_words: 64\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Crawl.Workers != 0 || c.Dedup.ShingleWords != 64 {
		t.Errorf("values not decoded as written: %+v %+v", c.Crawl, c.Dedup)
	}
	if _, err := Load(write(t, "crawl:\n")); err != nil {
		t.Errorf("an empty section: %v", err)
	}
	if _, err := Load(write(t, "crawl: 3\n")); err == nil || !strings.Contains(err.Error(), "line 1, column 8: crawl: want a section") {
		t.Errorf("a section given a value: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"unknown key":  {"crawl:\n  wrokers: 2\n", "wrokers"},
		"bad duration": {"politeness:\n  delay: soon\n", "not a duration"},
		"not yaml":     {"crawl: [\n", "yaml"},
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

func TestLoadBPHSOverrides(t *testing.T) {
	c, err := Load(write(t, "dedup:\n  simhash_index: bphs\n  bphs_blocks: 5\n  bphs_header: 2\n  psm_budget: 10\n  simhash_weight: tf\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Dedup.BPHSBlocks != 5 || c.Dedup.BPHSHeader != 2 || c.Dedup.PSMBudget != 10 || c.Dedup.SimhashWeight != "tf" {
		t.Errorf("overrides not read: %+v", c.Dedup)
	}
}
