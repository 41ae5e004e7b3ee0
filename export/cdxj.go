package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

// CDXJ index (the index pywb and OpenWayback replay from): one line per response, revisit and
// metadata record of the WARC,
//
//	urlkey timestamp {"url":...,"mime":...,"status":...,"digest":...,"length":...,"offset":...,"filename":...}
//
// urlkey is the SURT form of the target URI (SURT), timestamp the record's WARC-Date as
// YYYYMMDDhhmmss, offset and length the byte range of the record in the file (its gzip member in
// a gzipped WARC; in a plain WARC the record up to the end of its block, without the CRLF CRLF
// that closes it, as warcio counts it), mime the HTTP Content-Type without parameters ("warc/revisit" for revisits,
// the record's Content-Type for metadata), status the HTTP status, digest the payload digest
// without "sha1:". Fields with no value are left out. The lines are sorted byte-wise, as pywb's
// binary search and `LC_ALL=C sort` expect. This is what warcio's `cdx-index` writes for the same
// file, in sorted order (TestCDXJMatchesWarcio).

// cdxjIndex collects the index lines of the records written.
type cdxjIndex struct {
	filename string
	lines    []string
	buf      bytes.Buffer
	enc      *json.Encoder
}

// cdxjFields are the JSON fields of a line, in warcio's order.
type cdxjFields struct {
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

func newCDXJIndex(filename string) *cdxjIndex {
	ix := &cdxjIndex{filename: filename}
	ix.enc = json.NewEncoder(&ix.buf)
	ix.enc.SetEscapeHTML(false)
	return ix
}

// add indexes one record written at offset with length bytes; http is its block (the HTTP
// message of a response, the HTTP header of a revisit).
func (ix *cdxjIndex) add(fields []WARCField, contentType string, http []byte, offset, length int64) error {
	get := func(name string) string {
		for _, f := range fields {
			if f.Name == name {
				return f.Value
			}
		}
		return ""
	}
	f := cdxjFields{URL: get("WARC-Target-URI"), Length: fmt.Sprint(length), Offset: fmt.Sprint(offset), Filename: ix.filename}
	switch get("WARC-Type") {
	case "response":
		f.Status, f.Mime = httpStatusAndType(http)
	case "revisit":
		f.Status, _ = httpStatusAndType(http)
		f.Mime = "warc/revisit"
	case "metadata", "resource":
		f.Mime = contentType
	default:
		return nil
	}
	if d := get("WARC-Payload-Digest"); d != "" {
		_, f.Digest, _ = strings.Cut(d, ":")
	}
	ts := strings.NewReplacer("-", "", ":", "", "T", "").Replace(get("WARC-Date"))
	ts = ts[:min(14, len(ts))]
	ix.buf.Reset()
	if err := ix.enc.Encode(f); err != nil {
		return fmt.Errorf("cdxj: %w", err)
	}
	ix.lines = append(ix.lines, SURT(f.URL)+" "+ts+" "+strings.TrimSuffix(ix.buf.String(), "\n"))
	return nil
}

// write writes the sorted index to w.
func (ix *cdxjIndex) write(w io.Writer) error {
	slices.Sort(ix.lines)
	var b bytes.Buffer
	for _, l := range ix.lines {
		b.WriteString(l)
		b.WriteByte('\n')
		if b.Len() >= 1<<16 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return fmt.Errorf("cdxj: write: %w", err)
			}
			b.Reset()
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cdxj: write: %w", err)
	}
	return nil
}

// httpStatusAndType reads the status code and the Content-Type (without parameters) of an HTTP
// response header.
func httpStatusAndType(msg []byte) (status, mime string) {
	if i := bytes.Index(msg, []byte("\r\n\r\n")); i >= 0 {
		msg = msg[:i]
	}
	lines := strings.Split(string(msg), "\r\n")
	if parts := strings.Fields(lines[0]); len(parts) >= 2 && strings.HasPrefix(parts[0], "HTTP/") {
		status = parts[1]
	}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Type") {
			mime, _, _ = strings.Cut(value, ";")
			return status, strings.TrimSpace(mime)
		}
	}
	return status, ""
}

var wwwPrefix = regexp.MustCompile(`^(https?://)www\d*\.`)

// SURT returns the urlkey of an http or https URL in a CDXJ index: the host's labels reversed
// and joined by commas, the port when it is not the scheme's default, ")", the path and the
// query's parameters sorted, all lower case, a leading "www." (or "www2." ...) dropped:
// "http://www.Example.com:8080/a/B?y=1&x=2" is "com,example:8080)/a/b?x=2&y=1". It follows the
// rules of warcio's getSurt, with the WHATWG URL parser that warcio's `new URL` is. Other URLs
// are returned as they are.
func SURT(u string) string {
	if !strings.HasPrefix(u, "https:") && !strings.HasPrefix(u, "http:") {
		return u
	}
	u = wwwPrefix.ReplaceAllString(u, "$1")
	p, err := whatwgurl.Parse(strings.ToLower(u))
	if err != nil {
		return u
	}
	labels := strings.Split(p.Hostname(), ".")
	slices.Reverse(labels)
	var b strings.Builder
	b.WriteString(strings.Join(labels, ","))
	if port := p.Port(); port != "" {
		b.WriteString(":" + port)
	}
	b.WriteString(")")
	b.WriteString(p.Pathname())
	if q := p.Search(); q != "" {
		params := strings.Split(q[1:], "&")
		slices.Sort(params)
		b.WriteString("?" + strings.Join(params, "&"))
	}
	return b.String()
}
