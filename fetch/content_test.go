package fetch

import (
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// utf16Page is a page whose title and links must survive decoding: BMP letters
// of three scripts and a character outside the BMP (a surrogate pair in UTF-16).
const utf16Page = `<!doctype html><html><head><title>Ünïcödé – Юникод – 統一碼 𝄞</title></head>` +
	`<body><p>Texte en français, текст по-русски.</p><a href="/one">один</a> <a href="/deux/é">二</a></body></html>`

func utf16Bytes(tb testing.TB, s string, bigEndian bool) string {
	tb.Helper()
	e := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	if bigEndian {
		e = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	}
	b, err := e.NewEncoder().String(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestToUTF8UTF16: WHATWG encoding sniffing for UTF-16. A BOM wins over
// everything; a UTF-16 charset in the Content-Type header (the transport layer)
// is honoured, whatever its case or quoting; a <meta> declaring UTF-16 means
// UTF-8 (the prescan rule); a UTF-16 header label that the bytes contradict
// (no '<' as a UTF-16 code unit, or mostly NULs or lone surrogates) is passed
// over for the next source, trying the other byte order first. Every UTF-16
// label used to be read as UTF-8, so the markup came out as windows-1252.
func TestToUTF8UTF16(t *testing.T) {
	be, le := utf16Bytes(t, utf16Page, true), utf16Bytes(t, utf16Page, false)
	const bomBE, bomLE, bom8 = "\xFE\xFF", "\xFF\xFE", "\xEF\xBB\xBF"
	win1252, err := charmap.Windows1252.NewEncoder().String("<html><head><title>Café crème</title></head><body><p>Déjà vu, naïve façade, œuvre « à la carte ».</p></body></html>")
	if err != nil {
		t.Fatal(err)
	}
	metaPage := func(decl string) string {
		return `<!doctype html><html><head>` + decl + strings.TrimPrefix(utf16Page, `<!doctype html><html><head>`)
	}
	type tc struct {
		name, contentType, body, want, wantName string
	}
	var tests []tc
	// Header labels, in several spellings, without a BOM.
	for _, l := range []struct{ label, name string }{
		{"utf-16be", "utf-16be"}, {"UTF-16BE", "utf-16be"}, {`"utf-16be"`, "utf-16be"}, {`"UtF-16Be"`, "utf-16be"},
		{" utf-16be ", "utf-16be"}, {"unicodeFFFE", "utf-16be"},
		{"utf-16le", "utf-16le"}, {"UTF-16LE", "utf-16le"}, {`"Utf-16le"`, "utf-16le"}, {"unicode", "utf-16le"},
		{"ucs-2", "utf-16le"}, {"csUnicode", "utf-16le"}, {"iso-10646-ucs-2", "utf-16le"},
		{"utf-16", "utf-16le"}, {"UTF-16", "utf-16le"}, {`"utf-16"`, "utf-16le"},
	} {
		body := le
		if l.name == "utf-16be" {
			body = be
		}
		for _, ct := range []string{"text/html; charset=" + l.label, "text/html;charset=" + l.label, "Text/HTML; Charset=" + l.label + "; level=1"} {
			tests = append(tests, tc{"header " + ct, ct, body, utf16Page, l.name})
		}
	}
	tests = append(tests,
		// "utf-16" is UTF-16LE to WHATWG, big-endian by default to RFC 2781: the bytes decide.
		tc{"header utf-16, big-endian bytes", "text/html; charset=utf-16", be, utf16Page, "utf-16be"},
		// A wrong byte order in the label: the other one is tried before giving up on UTF-16.
		tc{"header utf-16le, big-endian bytes", "text/html; charset=utf-16le", be, utf16Page, "utf-16be"},
		tc{"header utf-16be, little-endian bytes", "text/html; charset=UTF-16BE", le, utf16Page, "utf-16le"},
		// With a BOM: the BOM wins over the header.
		tc{"header utf-16be + BOM", "text/html; charset=utf-16be", bomBE + be, utf16Page, "utf-16be"},
		tc{"header utf-16le + BOM", "text/html; charset=utf-16le", bomLE + le, utf16Page, "utf-16le"},
		tc{"header utf-16 + BOM BE", "text/html; charset=utf-16", bomBE + be, utf16Page, "utf-16be"},
		tc{"header utf-16be + BOM LE", "text/html; charset=utf-16be", bomLE + le, utf16Page, "utf-16le"},
		tc{"header utf-16le + BOM UTF-8", "text/html; charset=utf-16le", bom8 + utf16Page, utf16Page, "utf-8"},
		tc{"header iso-8859-1 + BOM BE", "text/html; charset=iso-8859-1", bomBE + be, utf16Page, "utf-16be"},
		// A BOM without a label.
		tc{"BOM BE, no charset", "text/html", bomBE + be, utf16Page, "utf-16be"},
		tc{"BOM LE, no charset", "text/html", bomLE + le, utf16Page, "utf-16le"},
		tc{"BOM BE, no header", "", bomBE + be, utf16Page, "utf-16be"},
		// <meta> declaring UTF-16 on bytes that are ASCII-compatible means UTF-8.
		tc{"meta utf-16", "text/html", metaPage(`<meta charset="utf-16">`), metaPage(`<meta charset="utf-16">`), "utf-8"},
		tc{"meta UTF-16BE", "text/html", metaPage(`<meta charset='UTF-16BE'>`), metaPage(`<meta charset='UTF-16BE'>`), "utf-8"},
		tc{"meta utf-16le unquoted", "", metaPage(`<meta charset=utf-16le>`), metaPage(`<meta charset=utf-16le>`), "utf-8"},
		tc{"meta http-equiv utf-16", "text/html", metaPage(`<meta http-equiv="Content-Type" content="text/html; charset=UTF-16">`),
			metaPage(`<meta http-equiv="Content-Type" content="text/html; charset=UTF-16">`), "utf-8"},
		// Lying labels: passed over for the next source.
		tc{"header utf-16le on windows-1252", "text/html; charset=utf-16le", win1252,
			"<html><head><title>Café crème</title></head><body><p>Déjà vu, naïve façade, œuvre « à la carte ».</p></body></html>", "windows-1252"},
		tc{"header utf-16be on utf-8", "text/html; charset=utf-16be", utf16Page, utf16Page, "utf-8"},
		tc{"header utf-16 on utf-8, odd length", "text/html; charset=utf-16", utf16Page + "\n", utf16Page + "\n", "utf-8"},
		tc{"header utf-16be on utf-8, meta utf-16", "text/html; charset=utf-16be", metaPage(`<meta charset="utf-16">`), metaPage(`<meta charset="utf-16">`), "utf-8"},
		tc{"header utf-16le on UTF-32LE", "text/html; charset=utf-16le", utf32LE("<html><title>x</title></html>"), "", ""},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, name := ToUTF8([]byte(tt.body), tt.contentType)
			if tt.want == "" { // only: not decoded as UTF-16
				if strings.HasPrefix(name, "utf-16") {
					t.Errorf("decoded as %s: %q", name, got)
				}
				return
			}
			if string(got) != tt.want || name != tt.wantName {
				t.Errorf("ToUTF8 = %q, %q\nwant      %q, %q", got, name, tt.want, tt.wantName)
			}
		})
	}
}

func utf32LE(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteByte(byte(r))
		b.WriteByte(byte(r >> 8))
		b.WriteByte(byte(r >> 16))
		b.WriteByte(0)
	}
	return b.String()
}
