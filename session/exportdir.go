package session

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

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

// MainTextMissing counts the pages of a JSONL export that have a main text
// but got none, by cause; each record's main_text_error says which.
type MainTextMissing struct {
	TooLarge int // over a limit of extraction (export.ErrMainTextTooLarge)
	NoRaw    int // no raw response kept (storage.keep_raw: false)
	Other    int // the raw response unreadable, or not HTTP
}

// Total is the number of pages without their main text.
func (m MainTextMissing) Total() int { return m.TooLarge + m.NoRaw + m.Other }

func (m *MainTextMissing) add(err error) {
	switch {
	case errors.Is(err, export.ErrMainTextTooLarge):
		m.TooLarge++
	case errors.Is(err, export.ErrNoRawResponse):
		m.NoRaw++
	default:
		m.Other++
	}
}

// String is the line export writes on stderr, e.g. "3 pages have no main
// text (main_text_error in their records says why): 2 over a limit of
// extraction, 1 whose raw response is unreadable".
func (m MainTextMissing) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{
		{m.TooLarge, "over a limit of extraction (size, elements, attributes, nesting)"},
		{m.NoRaw, "without a raw response (storage.keep_raw is false)"},
		{m.Other, "whose raw response is unreadable"},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return fmt.Sprintf("%d pages have no main text (main_text_error in their records says why): %s", m.Total(), strings.Join(parts, ", "))
}

// ExportDir exports the crawl in dir to the writer open returns (opened
// only once the store is open, so a refused store creates no file). It
// returns the records written and the pages without main text; a damaged
// store's error names what was written.
func ExportDir(dir string, open func() (io.Writer, func() error, error), o ExportOptions) (n int, noMainText MainTextMissing, err error) {
	db, err := OpenExisting(dir)
	if err != nil {
		return 0, noMainText, err
	}
	defer db.Close()
	w, closeOut, err := open()
	if err != nil {
		return 0, noMainText, err
	}
	damaged := 0
	if o.Format == "warc" {
		wo := o.WARC
		wo.Damaged = func(*storage.Page) { damaged++ }
		wo.Filename = filepath.Base(o.Out)
		n, err = ExportWARC(db, w, wo, o.CDX)
	} else {
		jo := o.JSONL
		jo.MainTextFailed = func(_ *storage.Page, err error) { noMainText.add(err) }
		jo.Damaged = func(*storage.Page) { damaged++ }
		n, err = export.JSONL(w, &releasingStore{DB: db}, jo)
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
