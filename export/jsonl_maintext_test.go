package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// storedResponse is a stored raw HTTP response (as crawl keeps it) with body.
func storedResponse(contentType string, body []byte) []byte {
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, len(body))
	return append([]byte(head), body...)
}

// mainTextStore is a real crawl store with pages whose main text is easy,
// missing, refused, in another charset, and unreadable.
func mainTextStore(tb testing.TB) *storage.DB {
	tb.Helper()
	latin1 := strings.Replace(articlePage, "The tides are caused", "Caf\xe9 owners know: the tides are caused", 1)
	hp := hostilePages()
	raws := map[uint64][]byte{
		1: storedResponse("text/html; charset=utf-8", []byte(articlePage)),
		3: storedResponse("text/html", hp["too-many-bytes"]),
		4: storedResponse("text/html; charset=iso-8859-1", []byte(latin1)),
		5: storedResponse("text/html", []byte(articlePage)),
		8: storedResponse("text/html", hp["too-many-elements"]),
		9: storedResponse("text/html", hp["too-deep"]),
	}
	pages := []storage.Page{
		{ID: 1, URL: "http://127.0.0.2/tides", Class: storage.ClassUnique, HasRaw: true},
		{ID: 2, URL: "http://127.0.0.2/no-raw", Class: storage.ClassUnique},
		{ID: 3, URL: "http://127.0.0.2/huge", Class: storage.ClassUnique, HasRaw: true},
		{ID: 4, URL: "http://127.0.0.2/latin1", Class: storage.ClassUnique, HasRaw: true},
		{ID: 5, URL: "http://127.0.0.3/tides", Class: storage.ClassExact, DuplicateOf: "http://127.0.0.2/tides", OriginalID: 1, HasRaw: true},
		{ID: 6, URL: "http://127.0.0.2/lost-raw", Class: storage.ClassUnique, HasRaw: true}, // raw never stored
		{ID: 7, URL: "http://127.0.0.2/image.png", Class: storage.ClassNotHTML},
		{ID: 8, URL: "http://127.0.0.2/many-elements", Class: storage.ClassUnique, HasRaw: true},
		{ID: 9, URL: "http://127.0.0.2/deep", Class: storage.ClassNear, DuplicateOf: "http://127.0.0.2/tides", OriginalID: 1, HasRaw: true},
	}
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *storage.Tx) error {
		for i := range pages {
			p := &pages[i]
			if err := tx.PutPage(p); err != nil {
				return err
			}
			if err := tx.PutText(p.ID, "visible text of "+p.URL); err != nil {
				return err
			}
			if raw, ok := raws[p.ID]; ok {
				if err := tx.PutRaw(p.ID, []byte("GET / HTTP/1.1\r\n\r\n"), raw); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// TestJSONLMainText: every parsed page gets main_text beside its unchanged
// text; a page whose main text cannot be had (no raw response, too large by
// any limit, raw response lost) is written whole with an empty main_text
// and its main_text_error says why, as the caller is told; the charset is
// decoded as the crawl decoded it.
func TestJSONLMainText(t *testing.T) {
	db := mainTextStore(t)
	failed := map[string]error{}
	recs := readJSONL(t, db, JSONLOptions{All: true, MainText: true, MainTextFailed: func(p *storage.Page, err error) { failed[p.URL] = err }})
	byURL := map[string]Record{}
	for _, r := range recs {
		if r.MainText == nil {
			t.Fatalf("%s: no main_text field", r.URL)
		}
		if r.Text != "visible text of "+r.URL {
			t.Errorf("%s: text changed to %q", r.URL, r.Text)
		}
		byURL[r.URL] = r
	}
	if len(recs) != 9 {
		t.Fatalf("%d records, want 9", len(recs))
	}
	for _, u := range []string{"http://127.0.0.2/tides", "http://127.0.0.3/tides", "http://127.0.0.2/latin1"} {
		mt := *byURL[u].MainText
		if !strings.Contains(mt, "neap tides") || strings.Contains(mt, "Privacy policy") {
			t.Errorf("%s: main text %q", u, mt)
		}
	}
	if mt := *byURL["http://127.0.0.2/latin1"].MainText; !strings.Contains(mt, "Café owners") {
		t.Errorf("latin1 page not decoded: %q", mt)
	}
	for u, want := range map[string]struct {
		err    error
		detail string // in main_text_error
	}{
		"http://127.0.0.2/no-raw":        {ErrNoRawResponse, "storage.keep_raw"},
		"http://127.0.0.2/huge":          {ErrMainTextTooLarge, "bytes of HTML, the limit is"},
		"http://127.0.0.2/many-elements": {ErrMainTextTooLarge, "elements"},
		"http://127.0.0.2/deep":          {ErrMainTextTooLarge, "nested more than"},
		"http://127.0.0.2/lost-raw":      {storage.ErrNotFound, "raw response"},
	} {
		if mt := *byURL[u].MainText; mt != "" {
			t.Errorf("%s: main text %q, want none", u, mt)
		}
		if !errors.Is(failed[u], want.err) {
			t.Errorf("%s: failure %v, want %v", u, failed[u], want.err)
		}
		if e := byURL[u].MainTextError; failed[u] == nil || e != failed[u].Error() || !strings.Contains(e, want.detail) {
			t.Errorf("%s: main_text_error %q, want the failure %v, naming %q", u, e, failed[u], want.detail)
		}
	}
	if len(failed) != 5 {
		t.Errorf("failures reported: %v, want 5", failed)
	}
	for u, r := range byURL {
		if _, ok := failed[u]; !ok && r.MainTextError != "" {
			t.Errorf("%s: main_text_error %q, but extraction ran", u, r.MainTextError)
		}
	}
	if mt := *byURL["http://127.0.0.2/image.png"].MainText; mt != "" {
		t.Errorf("not_html page has main text %q", mt)
	}
}

// TestJSONLMainTextInText: with MainTextInText, text holds the main text
// and no record has main_text; records keep their order whatever the
// number of workers.
func TestJSONLMainTextInText(t *testing.T) {
	db := mainTextStore(t)
	var outs [][]byte
	for _, workers := range []int{1, 3, 8} {
		var b bytes.Buffer
		if _, err := JSONL(&b, db, JSONLOptions{All: true, MainTextInText: true, MainTextWorkers: workers}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b.Bytes())
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Errorf("output with %d workers differs from 1 worker's", []int{1, 3, 8}[i])
		}
	}
	for _, line := range bytes.Split(bytes.TrimSpace(outs[0]), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["main_text"]; ok {
			t.Errorf("%s: main_text written beside a main-text text", m["url"])
		}
		text, _ := m["text"].(string)
		switch m["url"] {
		case "http://127.0.0.2/tides":
			if !strings.Contains(text, "neap tides") || strings.Contains(text, "visible text") {
				t.Errorf("text is not the main text: %q", text)
			}
		case "http://127.0.0.2/no-raw":
			if text != "" {
				t.Errorf("no-raw page: text %q, want the empty main text", text)
			}
		}
	}
}
