package crawl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Every option the stages refuse is named, with its line, in each complaint
// it causes (issue 28: validation errors name the YAML key and its line).
// Each option of the Config is set alone, on line 3 of a file, to values of
// its kind that are out of range somewhere; wherever crawl.Validate refuses
// one, every complaint must begin "line 3: KEY: ".
func TestValidationNamesKeyAndLine(t *testing.T) {
	bad := []string{"-1", "0", "1000000000", "2.5", "-0.5", "-1s", "0s", `"bogus value"`, `""`, "[\"::x\"]", "[\"%zz\"]"}
	refused := map[string]bool{}
	for _, key := range configs.Keys() {
		section, option, _ := strings.Cut(key, ".")
		for _, v := range bad {
			path := filepath.Join(t.TempDir(), "c.yaml")
			body := "# line 1\n" + section + ":\n  " + option + ": " + v + "\n"
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, where, err := configs.LoadWhere(path)
			if err != nil {
				continue // not of the option's type: the decoder's complaint, with its line
			}
			if where[key] != "line 3" {
				t.Fatalf("%s: %s: where = %q, want line 3", key, v, where[key])
			}
			err = configs.Attribute(cfg, where, crawl.Validate)
			if err == nil {
				continue
			}
			refused[key] = true
			for _, m := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(m, "line 3: "+key+": ") {
					t.Errorf("%s: %s: complaint %q does not begin with the key and its line", key, v, m)
				}
			}
		}
	}
	// The test reaches the stages: options of five of them are refused.
	for _, key := range []string{"crawl.workers", "politeness.adaptive_factor", "fetch.max_redirects", "urls.max_length", "dedup.samples", "mirror.link_sample", "crawl.scope"} {
		if !refused[key] {
			t.Errorf("%s: no bad value refused", key)
		}
	}
	t.Logf("%d of %d options refused some value", len(refused), len(configs.Keys()))
}

// A complaint about two options names both; an option set by a flag is named
// by the flag; the error still wraps the stage's (errors.Is).
func TestValidationNamesEveryKeyBehindAComplaint(t *testing.T) {
	cfg := configs.Default()
	cfg.Politeness.Delay = configs.Duration(2e9)
	cfg.Politeness.MaxDelay = configs.Duration(1e9)
	cfg.Crawl.Scope = "nowhere"
	where := configs.Where{"politeness.delay": "--delay", "politeness.max_delay": "line 7"}
	err := configs.Attribute(cfg, where, crawl.Validate)
	if err == nil {
		t.Fatal("accepted max_delay below delay")
	}
	msg := err.Error()
	if !strings.Contains(msg, "--delay, line 7: politeness.delay, politeness.max_delay: ") {
		t.Errorf("complaint about the two delays names %q", msg)
	}
	if !strings.Contains(msg, "\ncrawl.scope: ") && !strings.HasPrefix(msg, "crawl.scope: ") {
		t.Errorf("an option set in code is named without a source: %q", msg)
	}
	if !errors.Is(err, frontier.ErrScope) {
		t.Errorf("the attributed error does not wrap the stage's: %v", err)
	}
}
