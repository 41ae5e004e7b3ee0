package session

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Settings returns the crawl's settings as its metadata records them, for
// the warcinfo record of a WARC export: the storage schema, the request
// count, whether the crawl ran to completion, and every option of the stored
// configuration as "section.key" (lists comma-separated), with the two
// fields the WARC standard names (http-header-user-agent, robots).
func Settings(db *storage.DB) (map[string]string, error) {
	settings := map[string]string{}
	for _, m := range []struct{ meta, field string }{
		{storage.MetaVersion, "storage-schema"},
		{storage.MetaRequests, "crawl-requests"},
		{storage.MetaComplete, "crawl-complete"},
	} {
		v, err := db.GetMeta(m.meta)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("crawl metadata %q: %w", m.meta, err)
		}
		settings[m.field] = string(v)
	}
	cfg, err := db.GetMeta(storage.MetaConfig)
	if errors.Is(err, storage.ErrNotFound) {
		return settings, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl metadata %q: %w", storage.MetaConfig, err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(cfg, &tree); err != nil {
		return nil, fmt.Errorf("stored crawl config: %w", err)
	}
	flattenSettings("", tree, settings)
	// The two warcinfo fields the WARC standard names for these settings.
	if ua, ok := settings["fetch.user_agent"]; ok {
		settings["http-header-user-agent"] = ua
	}
	switch settings["politeness.obey_robots"] {
	case "true":
		settings["robots"] = "obey"
	case "false":
		settings["robots"] = "ignore"
	}
	return settings, nil
}

// flattenSettings turns nested YAML maps into "section.key" settings; lists
// become comma-separated values.
func flattenSettings(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			flattenSettings(name, t[k], out)
		}
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = fmt.Sprint(e)
		}
		out[prefix] = strings.Join(parts, ",")
	case nil:
		out[prefix] = ""
	default:
		out[prefix] = fmt.Sprint(t)
	}
}
