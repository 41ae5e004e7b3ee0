package fetch

import (
	"bytes"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/saintfish/chardet"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// mediaType returns the lower-case media type of a Content-Type value, without parameters.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isHTMLType reports whether a media type is HTML or XHTML.
func isHTMLType(mt string) bool {
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// sniffHTML applies the WHATWG sniffing algorithm (net/http.DetectContentType) to a body whose
// Content-Type header is missing.
func sniffHTML(body []byte) bool {
	return isHTMLType(mediaType(http.DetectContentType(body)))
}

// ToUTF8 converts an HTML body to UTF-8. The encoding is taken, in order, from a byte-order mark
// (which the HTML standard ranks first), the Content-Type charset parameter, a <meta> declaration in
// the first 1024 bytes, then sniffing: UTF-8 when the whole body is valid UTF-8, otherwise the
// chardet guess on the first 64 KiB when it is confident, otherwise windows-1252 (the web's
// default). As in WHATWG's encoding sniffing, a UTF-16 label is honoured in the header (the
// transport layer) but means UTF-8 in a <meta>, which the bytes before it could not have been read
// by otherwise. A declared encoding that the bytes contradict is passed over for the next source:
// UTF-8 with mostly invalid sequences (mostlyUTF8), UTF-16 in neither byte order (looksUTF16).
// Invalid sequences become U+FFFD. The result shares raw when no conversion is needed.
// The second result is the name of the encoding used.
func ToUTF8(raw []byte, contentType string) ([]byte, string) {
	enc, name := detectHTMLEncoding(raw, contentType)
	if name == "utf-8" {
		body := bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF"))
		if utf8.Valid(body) {
			return body, name
		}
		return bytes.ToValidUTF8(body, []byte("\uFFFD")), name
	}
	out, err := enc.NewDecoder().Bytes(raw)
	if err != nil {
		// x/text decoders replace invalid input rather than failing; keep the bytes readable anyway.
		return bytes.ToValidUTF8(raw, []byte("\uFFFD")), "utf-8"
	}
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return out, name
}

func detectHTMLEncoding(raw []byte, contentType string) (encoding.Encoding, string) {
	switch {
	case bytes.HasPrefix(raw, []byte("\xEF\xBB\xBF")):
		return unicode.UTF8, "utf-8"
	case bytes.HasPrefix(raw, []byte("\xFE\xFF")):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "utf-16be"
	case bytes.HasPrefix(raw, []byte("\xFF\xFE")):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "utf-16le"
	}
	// A declared UTF-8 that most of the non-ASCII bytes contradict is a
	// server default (Go's and many others' "text/html; charset=utf-8" on a
	// legacy-encoded file), not the document's encoding: the next source is
	// asked instead. Browsers follow the header and show mojibake; a text
	// corpus should not.
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if e, name := headerCharset(raw, params["charset"]); e != nil {
			return e, name
		}
	}
	if e, name := lookupCharset(metaCharset(raw)); e != nil && (name != "utf-8" || mostlyUTF8(raw)) {
		return e, name
	}
	if utf8.Valid(raw) {
		return unicode.UTF8, "utf-8"
	}
	sample := raw[:min(len(raw), 64<<10)]
	if res, err := chardet.NewTextDetector().DetectBest(sample); err == nil && res.Confidence >= 50 {
		if e, name := lookupCharset(res.Charset); e != nil {
			return e, name
		}
	}
	return charmap.Windows1252, "windows-1252"
}

// headerCharset resolves the charset parameter of the Content-Type header, or returns nil when the
// label is unknown or the bytes contradict it. WHATWG's encoding sniffing honours a transport-layer
// UTF-16 label (UTF-16BE, UTF-16LE, and "utf-16" and its aliases, which mean UTF-16LE). A UTF-16 label
// on bytes that are not UTF-16 in the labelled byte order is tried in the other one ("utf-16" is
// big-endian by default to RFC 2781, little-endian to WHATWG; servers mix them up), and passed over
// when neither fits: a UTF-16 label on a windows-1252 or UTF-8 file is a server's mistake, as a
// contradicted "utf-8" is.
func headerCharset(raw []byte, label string) (encoding.Encoding, string) {
	label = strings.TrimSpace(label)
	if label == "" {
		return nil, ""
	}
	e, name := charset.Lookup(label)
	switch {
	case e == nil:
		return nil, ""
	case name == "utf-16be" || name == "utf-16le":
		for _, big := range []bool{name == "utf-16be", name != "utf-16be"} {
			if looksUTF16(raw, big) {
				if big {
					return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), "utf-16be"
				}
				return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), "utf-16le"
			}
		}
		return nil, ""
	case name == "utf-8":
		if !mostlyUTF8(raw) {
			return nil, ""
		}
		return unicode.UTF8, "utf-8"
	}
	return e, name
}

// looksUTF16 reports whether the first 64 KiB of raw read as UTF-16 HTML in the given byte order:
// markup is ASCII, so '<' must occur as a code unit (no ASCII-compatible text has a '<' byte next to
// a NUL byte, and text in the other byte order has 0x3C00 instead), NUL units must be rare (at most
// one in 8: UTF-32 and binary data have far more) and most surrogates paired (fewer than 8 lone
// ones, or at most half of them). An odd final byte is tolerated (it decodes as U+FFFD): a UTF-16
// page cut short is still UTF-16.
func looksUTF16(raw []byte, bigEndian bool) bool {
	raw = raw[:min(len(raw), 64<<10)&^1]
	units := len(raw) / 2
	lt, nul, lone, paired := 0, 0, 0, 0
	unit := func(i int) uint16 {
		if bigEndian {
			return uint16(raw[2*i])<<8 | uint16(raw[2*i+1])
		}
		return uint16(raw[2*i+1])<<8 | uint16(raw[2*i])
	}
	for i := 0; i < units; i++ {
		switch u := unit(i); {
		case u == '<':
			lt++
		case u == 0:
			nul++
		case u >= 0xD800 && u < 0xDC00: // high surrogate: a low one must follow
			if i+1 < units {
				if v := unit(i + 1); v >= 0xDC00 && v < 0xE000 {
					paired++
					i++
					continue
				}
			}
			lone++
		case u >= 0xDC00 && u < 0xE000:
			lone++
		}
	}
	return lt > 0 && nul*8 <= units && (lone < 8 || lone*2 <= lone+paired)
}

// mostlyUTF8 reports whether the first 64 KiB of raw are UTF-8 as far as
// their non-ASCII bytes tell: false when at least 8 sequences and over half
// of them are invalid. A UTF-8 page with a pasted Latin-1 footer passes; a
// page in a legacy encoding does not (EUC-KR, Shift_JIS and GBK text is about
// 86% invalid as UTF-8, single-byte encodings about 100%).
func mostlyUTF8(raw []byte) bool {
	raw = raw[:min(len(raw), 64<<10)]
	if utf8.Valid(raw) { // most pages: one fast pass, no counting
		return true
	}
	valid, invalid := 0, 0
	for i := 0; i < len(raw); {
		if raw[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			invalid++
		} else {
			valid++
		}
		i += n
	}
	return invalid < 8 || invalid*2 <= valid+invalid
}

// lookupCharset resolves a WHATWG encoding label found in a <meta> or guessed by chardet. A UTF-16
// label there is treated as UTF-8, as the HTML standard's prescan requires for <meta> (the bytes it
// was read from are ASCII-compatible). The header's label goes through headerCharset instead.
func lookupCharset(label string) (encoding.Encoding, string) {
	label = strings.TrimSpace(label)
	if label == "" {
		return nil, ""
	}
	e, name := charset.Lookup(label)
	if e == nil {
		return nil, ""
	}
	if strings.HasPrefix(name, "utf-16") || name == "utf-8" {
		return unicode.UTF8, "utf-8"
	}
	return e, name
}

// metaCharset finds the charset declared by <meta charset> or <meta http-equiv="content-type"
// content="...; charset=..."> in the first 1024 bytes.
func metaCharset(raw []byte) string {
	z := html.NewTokenizer(bytes.NewReader(raw[:min(len(raw), 1024)]))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" || !hasAttr {
				continue
			}
			var cs, content string
			httpEquiv := false
			for more := true; more; {
				var k, v []byte
				k, v, more = z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					cs = string(v)
				case "content":
					content = string(v)
				case "http-equiv":
					httpEquiv = strings.EqualFold(string(v), "content-type")
				}
			}
			if cs != "" {
				return cs
			}
			if httpEquiv && content != "" {
				if c := charsetFromContent(content); c != "" {
					return c
				}
			}
		}
	}
}

// charsetFromContent extracts charset=... from a meta content attribute.
func charsetFromContent(s string) string {
	i := strings.Index(strings.ToLower(s), "charset")
	if i < 0 {
		return ""
	}
	s = strings.TrimLeft(s[i+len("charset"):], " \t")
	if !strings.HasPrefix(s, "=") {
		return ""
	}
	s = strings.TrimLeft(s[1:], " \t")
	if s == "" {
		return ""
	}
	if q := s[0]; q == '"' || q == '\'' {
		if j := strings.IndexByte(s[1:], q); j >= 0 {
			return s[1 : j+1]
		}
		return ""
	}
	if j := strings.IndexAny(s, "; \t"); j >= 0 {
		return s[:j]
	}
	return s
}

// ParseRetryAfter interprets a Retry-After value: delta-seconds or an HTTP-date relative to now.
// It returns 0 when the value is absent, invalid or in the past.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		const maxSecs = int64((1<<63 - 1) / int64(time.Second))
		return time.Duration(min(secs, maxSecs)) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return d
	}
	return 0
}
