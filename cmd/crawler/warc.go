package main

import (
	"fmt"
	"io"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// exportWARC writes the crawl in db as a gzipped WARC 1.1 file to w and returns
// the number of records. The warcinfo record carries the crawl's settings:
// the effective configuration when the crawl stored it (metadata "config",
// YAML), the storage schema, the request count and whether the crawl ran to
// completion.
func exportWARC(db *storage.DB, w io.Writer, includeDuplicates bool, damaged func(*storage.Page)) (int, error) {
	settings, err := session.Settings(db)
	if err != nil {
		return 0, err
	}
	n, err := export.WARC(w, db, export.WARCOptions{
		IncludeDuplicates: includeDuplicates,
		Software:          "Horseshoe/" + version,
		Settings:          settings,
		Damaged:           damaged,
	})
	if err != nil {
		return n, fmt.Errorf("warc export: %w", err)
	}
	return n, nil
}
