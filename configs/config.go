// Package configs holds Horseshoe's configuration: the embedded default.yaml,
// which documents every option with its default, and the loader that reads a
// user's file over it and validates every option at once.
package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the text of the default configuration file.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Duration is a time.Duration that reads from YAML as "1s", "500ms", "24h".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 1s or 500ms", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use e.g. 1s, 500ms, 2m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MaxBodySize bounds fetch.max_body_size: a body's decoded text takes up to
// three times its bytes (one byte of windows-1252 or an invalid byte becomes
// three of UTF-8), and each is stored as one value of at most 2 GB.
const MaxBodySize = 512 << 20

// MaxURLLength bounds urls.max_length: a URL is part of store keys, some of
// which hold two URLs (a skipped copy and the page it waits on), and Badger
// refuses keys above 65,000 bytes.
const MaxURLLength = 16 << 10

// StoredValueSize is the largest value a crawl with body limit maxBody
// writes: its text (up to three bytes per body byte) or its raw response
// (the body, and headers of up to 1 MB).
func StoredValueSize(maxBody int64) int64 { return 3*maxBody + 1<<20 }

// Config is the whole configuration. Field names follow default.yaml.
type Config struct {
	Crawl      Crawl      `yaml:"crawl"`
	Politeness Politeness `yaml:"politeness"`
	Fetch      Fetch      `yaml:"fetch"`
	URLs       URLs       `yaml:"urls"`
	Dedup      Dedup      `yaml:"dedup"`
	Mirror     Mirror     `yaml:"mirror"`
	Storage    Storage    `yaml:"storage"`
}

// Crawl holds the crawl's size and scope.
type Crawl struct {
	Workers            int      `yaml:"workers"`
	MaxPages           int      `yaml:"max_pages"`
	MaxPagesPerHost    int      `yaml:"max_pages_per_host"`
	MaxDepth           int      `yaml:"max_depth"`
	Scope              string   `yaml:"scope"`
	Allow              []string `yaml:"allow"`
	Deny               []string `yaml:"deny"`
	FollowNofollow     bool     `yaml:"follow_nofollow"`
	SkipDuplicateLinks bool     `yaml:"skip_duplicate_links"`
	Sitemaps           bool     `yaml:"sitemaps"`
}

// Politeness holds per-host pacing, robots.txt and back-off.
type Politeness struct {
	Delay          Duration `yaml:"delay"`
	AdaptiveFactor float64  `yaml:"adaptive_factor"`
	MaxDelay       Duration `yaml:"max_delay"`
	ObeyRobots     bool     `yaml:"obey_robots"`
	RobotsTTL      Duration `yaml:"robots_ttl"`
	RobotsRetry    Duration `yaml:"robots_retry"`
	BackoffBase    Duration `yaml:"backoff_base"`
	BackoffMax     Duration `yaml:"backoff_max"`
	MaxFailures    int      `yaml:"max_failures"`
}

// Fetch holds HTTP settings.
type Fetch struct {
	UserAgent           string   `yaml:"user_agent"`
	RobotsAgent         string   `yaml:"robots_agent"`
	Timeout             Duration `yaml:"timeout"`
	MaxBodySize         int64    `yaml:"max_body_size"`
	MaxRedirects        int      `yaml:"max_redirects"`
	DenyPrivateNetworks bool     `yaml:"deny_private_networks"`
	AllowAddresses      []string `yaml:"allow_addresses"`
	Proxy               ProxyURL `yaml:"proxy"`
}

// URLs holds crawler-trap limits.
type URLs struct {
	MaxLength          int `yaml:"max_length"`
	MaxPathDepth       int `yaml:"max_path_depth"`
	MaxRepeatedSegment int `yaml:"max_repeated_segment"`
	MaxQueryParams     int `yaml:"max_query_params"`
}

// Dedup holds the near-duplicate filter's parameters.
type Dedup struct {
	ShingleWords  int     `yaml:"shingle_words"`
	Samples       int     `yaml:"samples"`
	Filter        string  `yaml:"filter"`
	FilterK       int     `yaml:"filter_k"`
	FilterS       int     `yaml:"filter_s"`
	FilterR       int     `yaml:"filter_r"`
	FilterBits    int     `yaml:"filter_bits"`
	Simhash       bool    `yaml:"simhash"`
	SimhashK      int     `yaml:"simhash_k"`
	SimhashIndex  string  `yaml:"simhash_index"`
	SimhashWeight string  `yaml:"simhash_weight"`
	PSMBudget     int     `yaml:"psm_budget"`
	BPHSBlocks    int     `yaml:"bphs_blocks"`
	BPHSHeader    int     `yaml:"bphs_header"`
	Threshold     float64 `yaml:"threshold"`
	URLTokens     bool    `yaml:"url_tokens"`
	TitleTokens   bool    `yaml:"title_tokens"`
}

// Mirror holds mirror-host detection settings.
type Mirror struct {
	Enabled      bool    `yaml:"enabled"`
	MirrorShare  float64 `yaml:"mirror_share"`
	OtherShare   float64 `yaml:"other_share"`
	FalseMirror  float64 `yaml:"false_mirror"`
	MissedMirror float64 `yaml:"missed_mirror"`
	MaxCompared  int     `yaml:"max_compared"`
	Sample       int     `yaml:"sample"`
	VerifyEvery  int     `yaml:"verify_every"`
}

// Storage holds Badger settings.
type Storage struct {
	SyncWrites   bool  `yaml:"sync_writes"`
	KeepRaw      bool  `yaml:"keep_raw"`
	MinFreeBytes int64 `yaml:"min_free_bytes"`
}

// Default returns the configuration of default.yaml.
func Default() Config {
	var c Config
	if err := decode(defaultYAML, &c); err != nil {
		panic("configs: embedded default.yaml is invalid: " + err.Error())
	}
	return c
}

// Load reads the YAML file at path over the defaults and validates the result.
// An empty path gives the defaults.
func Load(path string) (Config, error) {
	c := Default()
	if path == "" {
		return c, c.Validate()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("cannot read config: %w", err)
	}
	if err := decode(b, &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func decode(b []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: defaults
		}
		return err
	}
	return nil
}

// Validate reports every invalid option at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if c.Crawl.Workers < 1 || c.Crawl.Workers > 1024 {
		bad("crawl.workers must be between 1 and 1024, got %d", c.Crawl.Workers)
	}
	if c.Crawl.MaxPages < 0 {
		bad("crawl.max_pages must be >= 0, got %d", c.Crawl.MaxPages)
	}
	if c.Crawl.MaxPagesPerHost < 0 {
		bad("crawl.max_pages_per_host must be >= 0, got %d", c.Crawl.MaxPagesPerHost)
	}
	if c.Crawl.MaxDepth < 0 {
		bad("crawl.max_depth must be >= 0, got %d", c.Crawl.MaxDepth)
	}
	switch c.Crawl.Scope {
	case "host", "domain", "prefix", "any":
	default:
		bad("crawl.scope must be host, domain, prefix or any, got %q", c.Crawl.Scope)
	}
	for _, r := range c.Crawl.Allow {
		if _, err := regexp.Compile(r); err != nil {
			bad("crawl.allow: %q is not a regular expression: %v", r, err)
		}
	}
	for _, r := range c.Crawl.Deny {
		if _, err := regexp.Compile(r); err != nil {
			bad("crawl.deny: %q is not a regular expression: %v", r, err)
		}
	}

	p := c.Politeness
	if p.Delay < 0 {
		bad("politeness.delay must be >= 0, got %s", p.Delay.D())
	}
	if p.AdaptiveFactor < 0 || p.AdaptiveFactor > 100 {
		bad("politeness.adaptive_factor must be between 0 and 100, got %g", p.AdaptiveFactor)
	}
	if p.MaxDelay < p.Delay {
		bad("politeness.max_delay (%s) must be >= politeness.delay (%s)", p.MaxDelay.D(), p.Delay.D())
	}
	if p.RobotsTTL <= 0 {
		bad("politeness.robots_ttl must be > 0, got %s", p.RobotsTTL.D())
	}
	if p.RobotsRetry <= 0 {
		bad("politeness.robots_retry must be > 0, got %s", p.RobotsRetry.D())
	}
	if p.BackoffBase <= 0 || p.BackoffMax < p.BackoffBase {
		bad("politeness.backoff_base must be > 0 and <= backoff_max, got %s and %s", p.BackoffBase.D(), p.BackoffMax.D())
	}
	if p.MaxFailures < 1 {
		bad("politeness.max_failures must be >= 1, got %d", p.MaxFailures)
	}

	f := c.Fetch
	if f.UserAgent == "" {
		bad("fetch.user_agent must not be empty")
	}
	if f.RobotsAgent == "" || !regexp.MustCompile(`^[A-Za-z_-]+$`).MatchString(f.RobotsAgent) {
		bad("fetch.robots_agent must be a product token of letters, '_' and '-', got %q", f.RobotsAgent)
	}
	if f.Timeout <= 0 {
		bad("fetch.timeout must be > 0, got %s", f.Timeout.D())
	}
	if f.MaxBodySize < 1024 || f.MaxBodySize > MaxBodySize {
		bad("fetch.max_body_size must be between 1024 and %d bytes (512 MiB), got %d", MaxBodySize, f.MaxBodySize)
	}
	if f.MaxRedirects < 0 || f.MaxRedirects > 50 {
		bad("fetch.max_redirects must be between 0 and 50, got %d", f.MaxRedirects)
	}
	for _, a := range f.AllowAddresses {
		if !validAllowAddress(a) {
			bad("fetch.allow_addresses: %q is not an IP address, a CIDR prefix or a host name", a)
		}
	}

	u := c.URLs
	if u.MaxLength < 16 || u.MaxLength > MaxURLLength {
		bad("urls.max_length must be between 16 and %d, got %d", MaxURLLength, u.MaxLength)
	}
	if u.MaxPathDepth < 1 {
		bad("urls.max_path_depth must be >= 1, got %d", u.MaxPathDepth)
	}
	if u.MaxRepeatedSegment < 1 {
		bad("urls.max_repeated_segment must be >= 1, got %d", u.MaxRepeatedSegment)
	}
	if u.MaxQueryParams < 0 {
		bad("urls.max_query_params must be >= 0, got %d", u.MaxQueryParams)
	}

	d := c.Dedup
	if d.ShingleWords < 1 || d.ShingleWords > 32 {
		bad("dedup.shingle_words must be between 1 and 32, got %d", d.ShingleWords)
	}
	if d.Samples < 1 || d.Samples > 1024 {
		bad("dedup.samples must be between 1 and 1024, got %d", d.Samples)
	}
	switch d.Filter {
	case "altavista", "bing":
	case "custom":
		if d.FilterK < 1 || d.FilterS < 1 || d.FilterR < 1 || d.FilterR > d.FilterK {
			bad("dedup custom filter needs filter_k >= filter_r >= 1 and filter_s >= 1, got k=%d s=%d r=%d", d.FilterK, d.FilterS, d.FilterR)
		}
		if d.FilterK*d.FilterS > d.Samples {
			bad("dedup custom filter needs filter_k*filter_s <= samples, got %d*%d > %d", d.FilterK, d.FilterS, d.Samples)
		}
		if d.FilterBits != 16 && d.FilterBits != 64 {
			bad("dedup.filter_bits must be 16 or 64, got %d", d.FilterBits)
		}
	default:
		bad("dedup.filter must be altavista, bing or custom, got %q", d.Filter)
	}
	if d.SimhashK < 0 || d.SimhashK > 8 {
		bad("dedup.simhash_k must be between 0 and 8, got %d", d.SimhashK)
	}
	switch d.SimhashIndex {
	case "psm", "bphs":
	default:
		bad("dedup.simhash_index must be psm or bphs, got %q", d.SimhashIndex)
	}
	switch d.SimhashWeight {
	case "uniform", "tf":
	default:
		bad("dedup.simhash_weight must be uniform or tf, got %q", d.SimhashWeight)
	}
	if d.PSMBudget < 1 || d.PSMBudget > 4096 {
		bad("dedup.psm_budget must be between 1 and 4096, got %d", d.PSMBudget)
	}
	if d.SimhashIndex == "bphs" {
		if d.BPHSBlocks < 2 || d.BPHSBlocks > 16 {
			bad("dedup.bphs_blocks must be between 2 and 16, got %d", d.BPHSBlocks)
		} else if d.BPHSHeader < 1 || d.BPHSHeader > d.BPHSBlocks-d.SimhashK {
			bad("dedup.bphs_header must be between 1 and bphs_blocks - simhash_k = %d (a match within simhash_k bits leaves that many blocks intact), got %d",
				d.BPHSBlocks-d.SimhashK, d.BPHSHeader)
		}
	}
	if d.Threshold < 0.75 || d.Threshold > 1 {
		bad("dedup.threshold must be between 0.75 and 1 (the seeds never call pages below about 0.75 near-duplicates), got %g", d.Threshold)
	}
	if c.Storage.MinFreeBytes < 0 {
		bad("storage.min_free_bytes must be >= 0, got %d", c.Storage.MinFreeBytes)
	}
	m := c.Mirror
	if m.Sample < 1 || m.Sample > 10000 {
		bad("mirror.sample must be between 1 and 10000, got %d", m.Sample)
	}
	if !(m.OtherShare > 0 && m.OtherShare < m.MirrorShare && m.MirrorShare < 1) {
		bad("mirror.other_share and mirror.mirror_share must satisfy 0 < other_share < mirror_share < 1, got %g and %g", m.OtherShare, m.MirrorShare)
	}
	if !(m.FalseMirror > 0 && m.FalseMirror < 0.5) {
		bad("mirror.false_mirror must be above 0 and below 0.5, got %g", m.FalseMirror)
	}
	if m.MaxCompared < 1 {
		bad("mirror.max_compared must be >= 1, got %d", m.MaxCompared)
	}
	if !(m.MissedMirror > 0 && m.MissedMirror < 0.5) {
		bad("mirror.missed_mirror must be above 0 and below 0.5, got %g", m.MissedMirror)
	}
	if m.VerifyEvery < 2 {
		bad("mirror.verify_every must be >= 2, got %d", m.VerifyEvery)
	}
	return errors.Join(errs...)
}

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)

// validAllowAddress reports whether a names an address (IP or CIDR prefix) or a host name.
func validAllowAddress(a string) bool {
	if _, err := netip.ParseAddr(a); err == nil {
		return true
	}
	if _, err := netip.ParsePrefix(a); err == nil {
		return true
	}
	return len(a) <= 253 && hostNameRE.MatchString(a)
}
