package session

import (
	"fmt"
	"io"
	"os"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// ExportWARC writes the crawl in db as a gzipped WARC 1.1 file to w and returns
// the number of records; o.Settings are the crawl's (Settings). The warcinfo record carries the crawl's settings:
// the effective configuration when the crawl stored it (metadata "config",
// YAML), the storage schema, the request count and whether the crawl ran to
// completion. With cdxPath, the CDXJ index of the file, which it names
// filename, is written there.
func ExportWARC(db *storage.DB, w io.Writer, o export.WARCOptions, cdxPath string) (int, error) {
	var err error
	if o.Settings, err = Settings(db); err != nil {
		return 0, err
	}
	if cdxPath != "" {
		f, err := os.Create(cdxPath)
		if err != nil {
			return 0, fmt.Errorf("cannot write the CDXJ index: %w", err)
		}
		defer f.Close()
		o.CDXJ = f
	}
	n, err := export.WARC(w, &releasingStore{DB: db}, o)
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
