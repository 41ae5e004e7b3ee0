package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// exportWARC writes the crawl in db as a gzipped WARC 1.1 file to w and returns
// the number of records. The warcinfo record carries the crawl's settings:
// the effective configuration when the crawl stored it (metadata "config",
// YAML), the storage schema, the request count and whether the crawl ran to
// completion. With cdxPath, the CDXJ index of the file, which it names
// filename, is written there.
func exportWARC(db *storage.DB, w io.Writer, includeDuplicates bool, damaged func(*storage.Page), cdxPath, filename string) (int, error) {
	settings, err := warcSettings(db)
	if err != nil {
		return 0, err
	}
	o := export.WARCOptions{
		IncludeDuplicates: includeDuplicates,
		Software:          "Horseshoe/" + version,
		Settings:          settings,
		Damaged:           damaged,
		Filename:          filename,
	}
	if cdxPath != "" {
		f, err := os.Create(cdxPath)
		if err != nil {
			return 0, fmt.Errorf("cannot write the CDXJ index: %w", err)
		}
		defer f.Close()
		o.CDXJ = f
	}
	n, err := export.WARC(w, db, o)
	if err != nil {
		return n, fmt.Errorf("warc export: %w", err)
	}
	if f, ok := o.CDXJ.(*os.File); ok {
		if err := f.Close(); err != nil {
			return n, fmt.Errorf("cannot write the CDXJ index: %w", err)
		}
	}
	return n, nil
}

// warcSettings collects the warcinfo settings from the crawl's metadata.
func warcSettings(db *storage.DB) (map[string]string, error) {
	settings := map[string]string{}
	for _, m := range []struct{ meta, field string }{
		{"version", "storage-schema"},
		{"requests", "crawl-requests"},
		{"complete", "crawl-complete"},
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
	cfg, err := db.GetMeta("config")
	if errors.Is(err, storage.ErrNotFound) {
		return settings, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl metadata %q: %w", "config", err)
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
