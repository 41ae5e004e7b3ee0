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
	Raw(id uint64) (request, response []byte, err error) // for the main text
}

// JSONLOptions selects what JSONL export writes.
type JSONLOptions struct {
	All bool // also write every non-unique page, with its class
	// MainText writes every parsed page's main text (see MainText) in
	// "main_text", beside the whole visible text in "text". Extraction
	// takes about a millisecond a page, most of an export's time, so it is
	// asked for (issue 30).
	MainText bool
	// MainTextInText writes the main text (see MainText) in "text" instead
	// of the whole visible text, and no "main_text".
	MainTextInText bool
	// MainTextWorkers is how many pages have their main text extracted at
	// once; 0 means GOMAXPROCS.
	MainTextWorkers int
	// MainTextFailed, when set, is called (from one goroutine, in record
	// order) for every page whose main text could not be extracted, with
	// why: ErrNoRawResponse, ErrMainTextTooLarge, an unreadable raw
	// response. The page is written with an empty main text.
	MainTextFailed func(p *storage.Page, err error)
	// Damaged, when set, is called (from one goroutine, in record order)
	// for every record written with "damaged": true.
	Damaged func(p *storage.Page)
}

// Member is a page suppressed in favour of a unique page: any other record
// of the unique page's cluster.
type Member struct {
	URL         string  `json:"url"`
	Class       string  `json:"class"`
	DuplicateOf string  `json:"duplicate_of,omitempty"` // the original it names (the representative, or another member)
	Similarity  float64 `json:"similarity,omitempty"`
	Method      string  `json:"method,omitempty"`
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
	// MainText is the page's main text: the article Mozilla's Readability
	// finds, without navigation, headers and footers (see MainText). It is
	// "" when the page has none or it could not be extracted, and omitted
	// unless asked for (JSONLOptions.MainText) or when Text holds it
	// (JSONLOptions.MainTextInText).
	MainText *string `json:"main_text,omitempty"`
	// MainTextError says why a page that has a main text (a unique page or
	// a duplicate) got none: too large for extraction (which limit), no
	// raw response kept, or one unreadable. Omitted when extraction ran,
	// also when it found no article.
	MainTextError string `json:"main_text_error,omitempty"`
	// Language is identified from the text when that is reliable
	// (LanguageSource "text", with LanguageConfidence), else the primary
	// subtag of <html lang> (LanguageSource "html"); omitted when neither.
	Language           string  `json:"language,omitempty"`
	LanguageSource     string  `json:"language_source,omitempty"`
	LanguageConfidence float64 `json:"language_confidence,omitempty"`
	LanguageDeclared   string  `json:"language_declared,omitempty"` // <html lang> as written
	SHA256             string  `json:"sha256,omitempty"`
	Simhash            string  `json:"simhash,omitempty"`
	// Cluster is the same for every record of one cluster: a connected
	// component of the duplicate_of edges (see cluster.go), named by its
	// representative's id. Representative marks the cluster's unique page.
	Cluster        string   `json:"cluster"`
	Representative bool     `json:"representative"`
	Class          string   `json:"class"`
	DuplicateOf    string   `json:"duplicate_of,omitempty"`
	Duplicates     []Member `json:"duplicates"`
	// Damaged marks a page whose text or raw response could not be read
	// back from a damaged store (storage.ErrDamaged): Text is empty when the
	// text was lost, MainText when the raw response was; the rest is as
	// recorded.
	Damaged bool `json:"damaged,omitempty"`
	// Gone marks a page that the latest recrawl found no longer served at
	// its URL: 404 or 410, or a redirect to MovedTo. GoneStatus is that
	// visit's status and GoneAt its date; Text and the rest are the last
	// version the URL served, as fetched at FetchedAt.
	Gone       bool      `json:"gone,omitempty"`
	GoneStatus int       `json:"gone_status,omitempty"`
	GoneAt     time.Time `json:"gone_at,omitzero"`
	MovedTo    string    `json:"moved_to,omitempty"`
}

// JSONL writes one object per unique page, the representative of its
// cluster, with every other record of the cluster in duplicates (exact and
// near duplicates, mirror copies skipped, and duplicates of those). With All,
// every other record follows with its class and its cluster's value, so that
// keeping the records with "representative": true, or one record per
// "cluster", keeps one page per cluster.
//
// With o.MainText or o.MainTextInText, every page whose HTML was parsed
// (unique pages and duplicates) gets its main text, extracted from its
// stored raw response; the whole visible text stays in text unless
// o.MainTextInText.
//
// It streams (issue 30): it reads the store's records three or four times
// (clustering, the clusters' members, the unique pages, with All the
// others) and keeps a fixed-size state per record and the member list of
// each cluster (the duplicates' URLs), never the pages' texts or records.
//
// A page whose text or raw response cannot be read (storage.ErrDamaged) is
// still written, with an empty text or main text and "damaged": true; the
// caller learns how many from o.Damaged, and what is damaged from the store
// (storage.DB.Damage).
func JSONL(w io.Writer, st Store, o JSONLOptions) (int, error) {
	cl, err := newClusters(st)
	if err != nil {
		return 0, err
	}
	members, err := cl.members(st)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	mw := newMainTextWriter(st, o, func(r *Record) error { return enc.Encode(r) })
	// write writes the record of p, node n of the clustering, if keep.
	n := int32(0)
	write := func(p *storage.Page, keep bool) error {
		defer func() { n++ }()
		if int(n) >= cl.records || cl.ids[n] != p.ID {
			return errStoreChanged
		}
		if !keep {
			return nil
		}
		text := ""
		var terr error
		if p.ID != 0 {
			text, terr = st.Text(p.ID)
		}
		damaged := errors.Is(terr, storage.ErrDamaged)
		if terr != nil && !damaged && p.Class == storage.ClassUnique { // other pages may have no text
			return fmt.Errorf("text of %s: %w", p.URL, terr)
		}
		r := record(p, text)
		r.Damaged = damaged
		r.Cluster, r.Representative = cl.of(n)
		r.Duplicates = []Member{}
		if p.Class == storage.ClassUnique {
			r.Duplicates = append(r.Duplicates, members.of(n)...)
		}
		return mw.add(p, r)
	}
	err = st.ForEachPage(func(p *storage.Page) error { return write(p, p.Class == storage.ClassUnique) })
	if err == nil && int(n) != cl.pages {
		err = errStoreChanged
	}
	if err == nil && o.All {
		// Every other record follows, in record order.
		n = 0
		err = st.ForEachPage(func(p *storage.Page) error { return write(p, p.Class != storage.ClassUnique) })
		if err == nil {
			err = st.ForEachSkipped(func(p *storage.Page) error {
				p.ID = 0 // a skip record is known by its URL
				return write(p, true)
			})
		}
		if err == nil && int(n) != cl.records {
			err = errStoreChanged
		}
	}
	written, werr := mw.close()
	if err == nil {
		err = werr
	}
	if err != nil {
		return written, err
	}
	return written, bw.Flush()
}

func record(p *storage.Page, text string) Record {
	r := Record{
		URL: p.URL, FinalURL: p.URL, FetchedAt: p.FetchedAt, Status: p.Status, ContentType: p.ContentType,
		Title: p.Title, Text: text, SHA256: p.SHA256, Class: string(p.Class), DuplicateOf: p.DuplicateOf,
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
	if rv := p.Revisit; rv.Gone() {
		r.Gone, r.GoneStatus, r.GoneAt, r.MovedTo = true, rv.Status, rv.FetchedAt, rv.Location
	}
	r.Cluster = strconv.FormatUint(p.ID, 10) // JSONL sets the cluster's value
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
