package crawl

import (
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestSettleWithTitleTokens: with dedup.title_tokens the token stream starts
// with the title's words, so a settlement must read the candidate's title
// (from its page record) as well as its text: a page whose title and text
// equal the candidate's settles at J = 1, and one whose title differs below.
func TestSettleWithTitleTokens(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	po := parse.Options{MaxTokens: 1 << 20, TitleTokens: true}
	e := New(Options{Parse: po}, db, nil, nil, nil, det, nil)
	title, text := "Chapter seven of the handbook", strings.Repeat("plain words of the body text ", 8)
	if err := db.Update(func(tx *storage.Tx) error {
		if err := tx.PutPage(&storage.Page{ID: 7, URL: "http://h/7", Title: title}); err != nil {
			return err
		}
		return tx.PutText(7, text)
	}); err != nil {
		t.Fatal(err)
	}
	same := parse.Tokenize(parse.Tokenize(nil, title), text)
	if j, ok := e.settler(same)(7); !ok || j != 1 {
		t.Errorf("same title and text: J = %v, %v; want 1", j, ok)
	}
	other := parse.Tokenize(parse.Tokenize(nil, "Appendix B of another manual entirely"), text)
	if j, ok := e.settler(other)(7); !ok || j >= 1 {
		t.Errorf("another title: J = %v, %v; want below 1", j, ok)
	}
}
