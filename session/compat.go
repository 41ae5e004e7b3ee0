package session

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// errSigned stops the scan for a signature at the first one.
var errSigned = errors.New("signed")

// CheckCompatibility refuses to resume a crawl with settings that change how
// a page's signature is made: dedup's (dedup.Options.CheckCompatibility) and
// the parser's URL and title tokens. The index is rebuilt from the stored
// signatures, so signatures made two ways would miss each other in it and
// duplicates of earlier pages would be kept. A store without signatures (a
// first run that signed no page) accepts any settings.
func CheckCompatibility(db *storage.DB, cfg configs.Config) error {
	b, err := db.GetMeta(storage.MetaConfig)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	switch err := db.ForEachSignature(func(uint64, []byte) error { return errSigned }); {
	case err == nil:
		return nil // nothing signed yet
	case !errors.Is(err, errSigned):
		return fmt.Errorf("storage: %w", err)
	}
	// Only the dedup section is read, over the defaults: keys an older
	// version did not write keep the values it signed with.
	prev := struct {
		Dedup configs.Dedup `yaml:"dedup"`
	}{configs.Default().Dedup}
	if err := yaml.Unmarshal(b, &prev); err != nil {
		return fmt.Errorf("storage: the stored config is unreadable: %w", err)
	}
	diffs := dedupDiffs(prev.Dedup, cfg.Dedup)
	for _, d := range []dedup.Difference{
		{Option: "url_tokens", Was: prev.Dedup.URLTokens, Now: cfg.Dedup.URLTokens},
		{Option: "title_tokens", Was: prev.Dedup.TitleTokens, Now: cfg.Dedup.TitleTokens},
	} {
		if d.Was != d.Now {
			diffs = append(diffs, fmt.Sprintf("dedup.%s %v (now %v)", d.Option, d.Was, d.Now))
		}
	}
	if prev.Dedup.URLTokens && cfg.Dedup.URLTokens {
		// Until session 7 URL tokens followed the text instead of standing
		// in place: such a store's signatures were made another way.
		if b, err := db.GetMeta(storage.MetaURLTokens); err != nil || string(b) != urlTokensInPlace {
			diffs = append(diffs, "dedup.url_tokens at the end of the page (an earlier Horseshoe; now in place)")
		}
	}
	if len(diffs) > 0 {
		return usagef("the crawl in this data dir signed its pages with %s: resume it with those settings, or start a new crawl in another data dir",
			strings.Join(diffs, ", "))
	}
	return nil
}

// dedupDiffs names each dedup signature setting that differs, as the config
// file calls it.
func dedupDiffs(was, now configs.Dedup) []string {
	err := crawl.DedupOptions(now).CheckCompatibility(crawl.DedupOptions(was))
	var ie *dedup.IncompatibleError
	if !errors.As(err, &ie) {
		return nil
	}
	labels := map[string]string{
		"filter_k":    "dedup supershingles (filter_k)",
		"filter_s":    "dedup supershingle samples (filter_s)",
		"filter_bits": "dedup supershingle bits (filter_bits)",
	}
	out := make([]string, len(ie.Differences))
	for i, d := range ie.Differences {
		name, ok := labels[d.Option]
		if !ok {
			name = "dedup." + d.Option
		}
		out[i] = fmt.Sprintf("%s %v (now %v)", name, d.Was, d.Now)
	}
	return out
}
