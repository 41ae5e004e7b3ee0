// Package configs holds Horseshoe's configuration: the embedded default.yaml,
// which documents every option with its default, and the loader that reads a
// user's file over it. configs only decodes: it reports what is not YAML, an
// unknown key or a value of the wrong type, each at its line and column; the
// values are checked by the stages that use them (crawl.Validate).
package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
		return errors.New("want a duration such as 1s or 500ms")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (use e.g. 1s, 500ms, 2m)", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

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
	Serve      Serve      `yaml:"serve"`
}

// Serve holds the settings of the report server ('crawl --serve',
// 'crawler serve') and its control API.
type Serve struct {
	Token Secret `yaml:"token"`
}

// Secret is a string that is never written back out: it marshals as "", so
// the configuration a crawl stores in its data dir keeps no token.
type Secret string

// MarshalYAML implements yaml.Marshaler.
func (Secret) MarshalYAML() (any, error) { return "", nil }

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
	SitemapMaxBytes    int64    `yaml:"sitemap_max_bytes"`
	CanonicalHints     bool     `yaml:"canonical_hints"`
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
	Bands         int     `yaml:"bands"`
	BandRows      int     `yaml:"band_rows"`
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
	Policy       string  `yaml:"policy"`
	VerifyShare  float64 `yaml:"verify_share"`
	LinkSample   float64 `yaml:"link_sample"`
	SampleSeed   uint64  `yaml:"sample_seed"`
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

// Load reads the YAML file at path over the defaults. An empty path gives the
// defaults. Load decodes only: crawl.Validate checks the values.
func Load(path string) (Config, error) {
	c, _, err := LoadWhere(path)
	return c, err
}

// decode reads the YAML document b over c. It reports every unknown key and
// every value of the wrong type at once, each with its line, column and key.
func decode(b []byte, c *Config) error { return decodeWhere(b, c, nil) }

// decodeWhere is decode, and notes in where (when not nil) the line of each
// key the document sets.
func decodeWhere(b []byte, c *Config, where Where) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err // not YAML: yaml's message names the line
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	var errs []error
	decodeNode(doc.Content[0], reflect.ValueOf(c).Elem(), "", where, &errs)
	return errors.Join(errs...)
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// decodeNode decodes n into v, the option or section named key: a section
// key by key, an option with yaml's decoder.
func decodeNode(n *yaml.Node, v reflect.Value, key string, where Where, errs *[]error) {
	at := func(n *yaml.Node, format string, a ...any) {
		*errs = append(*errs, fmt.Errorf("line %d, column %d: "+format, append([]any{n.Line, n.Column}, a...)...))
	}
	if v.Kind() != reflect.Struct || reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				at(n, "%s: want %s, got %q", key, kindName(v.Kind()), n.Value)
			} else {
				at(n, "%s: %v", key, err)
			}
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty section keeps its defaults
	}
	if n.Kind != yaml.MappingNode {
		if key == "" {
			key = "the file"
		}
		at(n, "%s: want a section of options (key: value lines), got %q", key, n.Value)
		return
	}
	fields := map[string]reflect.Value{}
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		fields[name] = v.Field(i)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name := k.Value
		if key != "" {
			name = key + "." + k.Value
		}
		f, ok := fields[k.Value]
		if !ok {
			at(k, "unknown key %s", name)
			continue
		}
		if where != nil {
			where[name] = fmt.Sprintf("line %d", k.Line)
		}
		decodeNode(val, f, name, where, errs)
	}
}

// kindName names what a value of kind k is written as.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	}
	return k.String()
}
