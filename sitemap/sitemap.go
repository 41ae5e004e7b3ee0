// Package sitemap reads sitemaps (sitemaps.org/protocol.html): XML urlsets,
// sitemap indexes, plain text lists, each possibly gzipped. It is pure: bytes
// in, values out, no network and no disk.
//
// Every read is bounded, so that a hostile sitemap costs bounded time and
// memory: at most Options.MaxURLs entries (the protocol's 50,000) and
// Options.MaxBytes uncompressed bytes (the protocol's 50 MB) are read, the
// XML is decoded as a stream (a gzip bomb is cut at MaxBytes without being
// inflated further), elements nest at most MaxDepth deep, and no entity is
// expanded (encoding/xml reads no DTD). What could not be read is recorded
// in the Result (Truncated, Err, Invalid); what came before it is kept.
package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding/htmlindex"
)

// Limits of the sitemaps protocol, the defaults of Options.
const (
	MaxURLs      = 50000    // entries per sitemap file (urlset or index)
	MaxBytes     = 50 << 20 // uncompressed bytes per sitemap file ("50MB")
	MaxLocLength = 2048     // a <loc> must be shorter than 2,048 characters
	// MaxDepth is the deepest element nesting read. A sitemap needs 3
	// (urlset, url, loc), extensions 4 or 5 (image:image, video:price).
	MaxDepth = 32
)

// Kind is what a sitemap file turned out to be.
type Kind string

// Kinds of sitemap files.
const (
	KindUnknown Kind = ""
	KindURLSet  Kind = "urlset"  // <urlset>: page URLs
	KindIndex   Kind = "index"   // <sitemapindex>: more sitemaps
	KindText    Kind = "text"    // one URL per line
	KindOther   Kind = "unknown" // XML with another root element (an HTML page, a feed)
)

// Entry is one <url> of a urlset, one <sitemap> of an index, or one line
// of a text sitemap.
type Entry struct {
	Loc        string    // absolute http(s) URL, as written (trimmed)
	LastMod    time.Time // zero when absent or not a W3C datetime
	ChangeFreq string    // always, hourly, daily, weekly, monthly, yearly, never; "" when absent or invalid
	Priority   float64   // 0.0 to 1.0; -1 when absent or invalid
}

// Result is what a sitemap file holds, as far as it could be read.
type Result struct {
	Kind    Kind
	Entries []Entry // page URLs (urlset, text) or sitemaps (index), in document order
	Gzip    bool    // the file was gzip-compressed
	Bytes   int64   // uncompressed bytes read
	// Invalid counts the entries left out: no <loc>, not an absolute
	// http(s) URL, longer than MaxLocLength.
	Invalid int
	// Truncated names the limit that ended the read early ("urls",
	// "bytes", "depth"); "" when the whole file was read.
	Truncated string
	// Err is why the file could not be read to its end (malformed XML,
	// bad gzip, an unsupported charset, not a sitemap); nil otherwise.
	Err error
}

// Options bounds a read. Zero fields take the protocol's limits.
type Options struct {
	MaxURLs  int   // entries kept (default MaxURLs)
	MaxBytes int64 // uncompressed bytes read (default MaxBytes)
}

func (o Options) withDefaults() Options {
	if o.MaxURLs <= 0 {
		o.MaxURLs = MaxURLs
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = MaxBytes
	}
	return o
}

// ErrNotSitemap is Result.Err for XML whose root is neither <urlset> nor
// <sitemapindex>.
var ErrNotSitemap = errors.New("not a sitemap")

// errTooLarge ends a read at Options.MaxBytes.
var errTooLarge = errors.New("sitemap: byte limit reached")

// Parse reads one sitemap file. The format is told by the content, not by
// the Content-Type or the name (servers get both wrong): gzip by its magic
// number, XML by a leading '<', plain text otherwise.
func Parse(body []byte, o Options) *Result {
	o = o.withDefaults()
	res := &Result{}
	var r io.Reader = bytes.NewReader(body)
	if len(body) >= 2 && body[0] == 0x1f && body[1] == 0x8b {
		res.Gzip = true
		zr, err := gzip.NewReader(r)
		if err != nil {
			res.Err = fmt.Errorf("gzip: %w", err)
			return res
		}
		zr.Multistream(false)
		r = zr
	}
	lr := &limitReader{r: r, n: o.MaxBytes}
	br := bufio.NewReaderSize(lr, 64<<10)
	if isXML(br) {
		parseXML(br, o, res)
	} else {
		res.Kind = KindText
		parseText(br, o, res)
	}
	res.Bytes = lr.read
	if errors.Is(res.Err, errTooLarge) {
		res.Err, res.Truncated = nil, "bytes"
	}
	return res
}

// limitReader reads at most n bytes and then fails with errTooLarge, so
// that a cut is told from the end of the file.
type limitReader struct {
	r    io.Reader
	n    int64
	read int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.read >= l.n {
		// One byte more tells a file of exactly n bytes from a longer one.
		var one [1]byte
		if k, _ := io.ReadFull(l.r, one[:]); k == 0 {
			return 0, io.EOF
		}
		return 0, errTooLarge
	}
	if rest := l.n - l.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := l.r.Read(p)
	l.read += int64(k)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("read: %w", err) // a bad gzip stream
	}
	return k, err
}

// isXML reports whether the content starts, after a byte order mark and
// white space, with '<'.
func isXML(br *bufio.Reader) bool {
	for i := 0; i < 1024; i++ {
		b, err := br.Peek(i + 1)
		if err != nil {
			return false
		}
		switch c := b[i]; {
		case c == '<':
			return true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		case i < 3 && (c == 0xef || c == 0xbb || c == 0xbf):
		default:
			return false
		}
	}
	return false
}

// parseText reads a text sitemap: one URL per line, UTF-8; blank lines are
// skipped, anything else that is not a URL is invalid. A line longer than
// MaxLocLength is skipped whole.
func parseText(br *bufio.Reader, o Options, res *Result) {
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > MaxLocLength+2 {
				long, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 || long {
			if long {
				res.Invalid++
			} else if s := strings.TrimSpace(strings.TrimPrefix(string(line), "\ufeff")); s != "" {
				if !res.add(Entry{Loc: s, Priority: -1}, o) {
					return
				}
			}
		}
		line, long = line[:0], false
		if err != nil {
			if !errors.Is(err, io.EOF) {
				res.Err = err
			}
			return
		}
	}
}

// add keeps a valid entry, or counts an invalid one; false when the entry
// limit is reached.
func (res *Result) add(e Entry, o Options) bool {
	if !validLoc(e.Loc) {
		res.Invalid++
		return true
	}
	if len(res.Entries) >= o.MaxURLs {
		res.Truncated = "urls"
		return false
	}
	res.Entries = append(res.Entries, e)
	return true
}

// validLoc reports whether loc is an absolute http(s) URL the protocol
// allows: shorter than MaxLocLength, no white space or control characters.
func validLoc(loc string) bool {
	if loc == "" || len(loc) >= MaxLocLength {
		return false
	}
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok || rest == "" || rest[0] == '/' || !(strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) {
		return false
	}
	for i := 0; i < len(loc); i++ {
		if c := loc[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// parseXML reads a urlset or an index as a stream of raw tokens, matching
// elements by their local names (sitemaps in the wild get the namespace
// wrong or leave it out). Decoding is lenient (Strict off: an unescaped '&'
// in a URL, a common mistake, is read as written); no entity is expanded
// but the five of XML.
func parseXML(br *bufio.Reader, o Options, res *Result) {
	d := xml.NewDecoder(br)
	d.Strict = false
	d.CharsetReader = charsetReader
	var (
		depth    int
		entry    Entry
		inEntry  bool
		field    string // local name of the entry's child being read
		text     strings.Builder
		overlong bool // the child's text is longer than any valid value
	)
	for {
		tok, err := d.RawToken()
		if err != nil {
			switch {
			case !errors.Is(err, io.EOF):
				res.Err = err
			case res.Kind == KindUnknown:
				res.Err = fmt.Errorf("%w: no root element", ErrNotSitemap)
			case depth > 0:
				res.Err = fmt.Errorf("unexpected end of file: %d elements not closed", depth)
			}
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > MaxDepth {
				res.Truncated = "depth"
				return
			}
			name := strings.ToLower(t.Name.Local)
			switch {
			case depth == 1:
				switch name {
				case "urlset":
					res.Kind = KindURLSet
				case "sitemapindex":
					res.Kind = KindIndex
				default:
					res.Kind = KindOther
					res.Err = fmt.Errorf("%w: root element <%s>", ErrNotSitemap, t.Name.Local)
					return
				}
			case depth == 2 && (name == "url" || name == "sitemap"):
				inEntry, entry = true, Entry{Priority: -1}
			case depth == 3 && inEntry:
				// Extensions (image:image, xhtml:link, news:news) use
				// other local names, or nest deeper.
				field, overlong = name, false
				text.Reset()
			}
		case xml.CharData:
			switch {
			case field == "" || overlong:
			case text.Len()+len(t) > MaxLocLength+64:
				overlong = true
			default:
				text.Write(t)
			}
		case xml.EndElement:
			switch {
			case depth == 3 && field != "":
				if !overlong {
					entry.set(field, strings.TrimSpace(text.String()))
				}
				field = ""
			case depth == 2 && inEntry:
				inEntry = false
				if !res.add(entry, o) {
					return
				}
			}
			if depth > 0 {
				depth--
			}
		}
	}
}

// set stores one child element of an entry; an invalid value is left out.
func (e *Entry) set(field, v string) {
	switch field {
	case "loc":
		e.Loc = v
	case "lastmod":
		e.LastMod, _ = ParseW3CDate(v)
	case "changefreq":
		switch v = strings.ToLower(v); v {
		case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
			e.ChangeFreq = v
		}
	case "priority":
		if p, err := strconv.ParseFloat(v, 64); err == nil && p >= 0 && p <= 1 {
			e.Priority = p
		}
	}
}

// charsetReader decodes the encodings an XML declaration may name (the
// protocol asks for UTF-8; ISO-8859-1 and windows-1252 are common).
func charsetReader(label string, r io.Reader) (io.Reader, error) {
	enc, err := htmlindex.Get(label)
	if err != nil {
		return nil, fmt.Errorf("unsupported charset %q", label)
	}
	return enc.NewDecoder().Reader(r), nil
}

// w3cLayouts are the W3C Datetime forms (www.w3.org/TR/NOTE-datetime) the
// protocol names, and the slips sitemaps commonly make (a space for the
// 'T', no zone: read as UTC).
var w3cLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
	"2006-01",
	"2006",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05Z07:00",
}

// ParseW3CDate parses a <lastmod> value; the time is in UTC.
func ParseW3CDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return time.Time{}, false
	}
	for _, l := range w3cLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
