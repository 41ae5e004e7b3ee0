// Package export writes a crawl's deduplicated corpus: JSONL for text users
// and WARC for archivists.
package export

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Store is the read side of a crawl store that export needs.
type Store interface {
	ForEachPage(fn func(*storage.Page) error) error
	ForEachSkipped(fn func(*storage.Page) error) error
	Text(id uint64) (string, error)
}

// JSONLOptions selects what JSONL export writes.
type JSONLOptions struct {
	All bool // also write every non-unique page, with its class
}

// Member is a page suppressed in favour of a unique page.
type Member struct {
	URL        string  `json:"url"`
	Class      string  `json:"class"`
	Similarity float64 `json:"similarity,omitempty"`
	Method     string  `json:"method,omitempty"`
}

// Record is one JSONL line.
type Record struct {
	URL         string    `json:"url"`
	FinalURL    string    `json:"final_url"`
	FetchedAt   time.Time `json:"fetched_at"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type"`
	Title       string    `json:"title"`
	Text        string    `json:"text"`
	// Language is identified from the text when that is reliable
	// (LanguageSource "text", with LanguageConfidence), else the primary
	// subtag of <html lang> (LanguageSource "html"); omitted when neither.
	Language           string   `json:"language,omitempty"`
	LanguageSource     string   `json:"language_source,omitempty"`
	LanguageConfidence float64  `json:"language_confidence,omitempty"`
	LanguageDeclared   string   `json:"language_declared,omitempty"` // <html lang> as written
	SHA256             string   `json:"sha256,omitempty"`
	Simhash            string   `json:"simhash,omitempty"`
	Cluster            string   `json:"cluster"`
	Class              string   `json:"class"`
	DuplicateOf        string   `json:"duplicate_of,omitempty"`
	Duplicates         []Member `json:"duplicates"`
	// Damaged marks a page whose text could not be read back from a damaged
	// store (storage.ErrDamaged): Text is empty, the rest is as recorded.
	Damaged bool `json:"damaged,omitempty"`
}

// JSONL writes one object per unique page (its cluster's representative:
// the first page of the cluster that was fetched), with the URLs suppressed
// in its favour. With All, every other page follows with its class.
//
// A page whose text cannot be read (storage.ErrDamaged) is still written,
// with an empty text and "damaged": true; the caller learns how many from
// the store (storage.DB.Damage).
func JSONL(w io.Writer, st Store, o JSONLOptions) (int, error) {
	members := map[string][]Member{}
	var others []*storage.Page
	collect := func(p *storage.Page) error {
		if p.Class != storage.ClassUnique {
			if p.DuplicateOf != "" {
				members[p.DuplicateOf] = append(members[p.DuplicateOf], Member{URL: p.URL, Class: p.Class, Similarity: p.Similarity, Method: p.Method})
			}
			if o.All {
				cp := *p
				others = append(others, &cp)
			}
		}
		return nil
	}
	if err := st.ForEachPage(collect); err != nil {
		return 0, err
	}
	if err := st.ForEachSkipped(collect); err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := st.ForEachPage(func(p *storage.Page) error {
		if p.Class != storage.ClassUnique {
			return nil
		}
		text, err := st.Text(p.ID)
		damaged := errors.Is(err, storage.ErrDamaged)
		if err != nil && !damaged {
			return fmt.Errorf("text of %s: %w", p.URL, err)
		}
		r := record(p, text)
		r.Damaged = damaged
		r.Duplicates = members[p.URL]
		if p.FinalURL != "" && p.FinalURL != p.URL {
			r.Duplicates = append(r.Duplicates, members[p.FinalURL]...)
		}
		if r.Duplicates == nil {
			r.Duplicates = []Member{}
		}
		n++
		return enc.Encode(r)
	})
	if err != nil {
		return n, err
	}
	for _, p := range others {
		text := ""
		var err error
		if p.ID != 0 {
			text, err = st.Text(p.ID)
		}
		r := record(p, text)
		r.Damaged = errors.Is(err, storage.ErrDamaged)
		r.Duplicates = []Member{}
		if err := enc.Encode(r); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}

func record(p *storage.Page, text string) Record {
	r := Record{
		URL: p.URL, FinalURL: p.URL, FetchedAt: p.FetchedAt, Status: p.Status, ContentType: p.ContentType,
		Title: p.Title, Text: text, SHA256: p.SHA256, Class: p.Class, DuplicateOf: p.DuplicateOf,
		LanguageDeclared: p.Lang,
	}
	switch decl := primaryLanguage(p.Lang); {
	case p.TextLang != "":
		r.Language, r.LanguageSource = p.TextLang, "text"
		r.LanguageConfidence = math.Round(p.TextLangConf*1000) / 1000
	case decl != "":
		r.Language, r.LanguageSource = decl, "html"
	}
	if p.FinalURL != "" {
		r.FinalURL = p.FinalURL
	}
	if p.Simhash != 0 {
		r.Simhash = fmt.Sprintf("%016x", p.Simhash)
	}
	cluster := p.ID
	if p.Class != storage.ClassUnique && p.OriginalID != 0 {
		cluster = p.OriginalID
	}
	r.Cluster = strconv.FormatUint(cluster, 10)
	return r
}

// primaryLanguage is the primary subtag of a language tag such as an
// <html lang> value ("en-US" -> "en"), lower-cased; "" when the tag has no
// ISO 639 primary subtag (two or three letters; "und" is undetermined).
func primaryLanguage(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	if len(tag) < 2 || len(tag) > 3 || tag == "und" {
		return ""
	}
	for _, c := range tag {
		if c < 'a' || c > 'z' {
			return ""
		}
	}
	return tag
}
