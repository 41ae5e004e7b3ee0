package session

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// ExportOptions say what ExportDir writes: Format jsonl or warc, Out the
// output's name ("-" for stdout; a WARC's records name its base), CDX a path
// for the WARC's CDXJ index ("" for none).
type ExportOptions struct {
	Format, Out, CDX string
	JSONL            export.JSONLOptions
	WARC             export.WARCOptions
}

// ExportDir exports the crawl in dir to the writer open returns (opened
// only once the store is open, so a refused store creates no file). It
// returns the records written and how many pages have no main text; a
// damaged store's error names what was written.
func ExportDir(dir string, open func() (io.Writer, func() error, error), o ExportOptions) (n, noMainText int, err error) {
	db, err := OpenExisting(dir)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	w, closeOut, err := open()
	if err != nil {
		return 0, 0, err
	}
	damaged := 0
	if o.Format == "warc" {
		wo := o.WARC
		wo.Damaged = func(*storage.Page) { damaged++ }
		wo.Filename = filepath.Base(o.Out)
		n, err = ExportWARC(db, w, wo, o.CDX)
	} else {
		jo := o.JSONL
		jo.MainTextFailed = func(*storage.Page, error) { noMainText++ }
		jo.Damaged = func(*storage.Page) { damaged++ }
		n, err = export.JSONL(w, db, jo)
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, noMainText, fmt.Errorf("export: %w", err)
	}
	did := fmt.Sprintf("exported what could be read: %d records to %s", n, o.Out)
	switch {
	case damaged > 0 && o.Format == "warc":
		did += fmt.Sprintf("; %d pages whose raw exchange is unreadable were left out (a duplicate's as a metadata record)", damaged)
	case damaged > 0:
		did += fmt.Sprintf(", %d of them flagged \"damaged\": true with their text or main text lost", damaged)
	}
	return n, noMainText, DamageError(dir, db, did)
}
