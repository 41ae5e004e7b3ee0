package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestExportDirMainTextMissing: pages left without main text are counted by
// cause on the line export prints, and each record says why in
// main_text_error: one over the size limit, one over the element limit, two
// without a raw response; a page whose extraction ran has no error.
func TestExportDirMainTextMissing(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	resp := func(body string) []byte {
		return []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n%s", body))
	}
	raws := map[uint64][]byte{
		1: resp("<html><body><article><p>" + strings.Repeat("The tide turns twice a day along this coast. ", 40) + "</p></article></body></html>"),
		2: resp("<body><p>" + strings.Repeat("x", export.MainTextMaxBytes) + "</p>"),
		3: resp("<body>" + strings.Repeat("<i></i>", export.MainTextMaxElements+1)),
	}
	err = db.Update(func(tx *storage.Tx) error {
		for id := uint64(1); id <= 5; id++ {
			_, hasRaw := raws[id]
			if err := tx.PutPage(&storage.Page{ID: id, URL: fmt.Sprintf("http://127.0.0.2/%d", id), Class: storage.ClassUnique, HasRaw: hasRaw}); err != nil {
				return err
			}
			if err := tx.PutText(id, fmt.Sprintf("page %d", id)); err != nil {
				return err
			}
			if hasRaw {
				if err := tx.PutRaw(id, []byte("GET / HTTP/1.1\r\n\r\n"), raws[id]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, missing, err := ExportDir(dir, func() (io.Writer, func() error, error) { return &out, func() error { return nil }, nil },
		ExportOptions{Format: "jsonl", Out: "pages.jsonl", JSONL: export.JSONLOptions{MainText: true}})
	if err != nil {
		t.Fatal(err)
	}
	if missing != (MainTextMissing{TooLarge: 2, NoRaw: 2}) {
		t.Errorf("missing %+v, want 2 too large, 2 without raw response", missing)
	}
	line := missing.String()
	for _, want := range []string{"4 pages have no main text", "main_text_error", "2 over a limit of extraction", "2 without a raw response"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	why := map[string]string{}
	for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var r export.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		why[r.URL] = r.MainTextError
	}
	for u, want := range map[string]string{
		"http://127.0.0.2/1": "",
		"http://127.0.0.2/2": "bytes of HTML, the limit is",
		"http://127.0.0.2/3": "elements",
		"http://127.0.0.2/4": "storage.keep_raw",
		"http://127.0.0.2/5": "storage.keep_raw",
	} {
		if got := why[u]; (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: main_text_error %q, want one naming %q", u, got, want)
		}
	}
}
