package export

import (
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRecordLanguage: the text's language when identified, else the primary
// subtag of <html lang>, else none; the declared tag is kept as written.
func TestRecordLanguage(t *testing.T) {
	for _, tc := range []struct {
		lang, textLang               string
		conf                         float64
		want, wantSource, wantDeclar string
		wantConf                     float64
	}{
		{"en-US", "de", 0.87654, "de", "text", "en-US", 0.877},
		{"pt-BR", "", 0, "pt", "html", "pt-BR", 0},
		{"", "fr", 1, "fr", "text", "", 1},
		{"", "", 0, "", "", "", 0},
		{"12", "", 0, "", "", "12", 0}, // not a language tag
	} {
		r := record(&storage.Page{URL: "http://x/", Lang: tc.lang, TextLang: tc.textLang, TextLangConf: tc.conf}, "")
		if r.Language != tc.want || r.LanguageSource != tc.wantSource || r.LanguageDeclared != tc.wantDeclar || r.LanguageConfidence != tc.wantConf {
			t.Errorf("lang %q text %q: got %q %q %q %v, want %q %q %q %v", tc.lang, tc.textLang,
				r.Language, r.LanguageSource, r.LanguageDeclared, r.LanguageConfidence, tc.want, tc.wantSource, tc.wantDeclar, tc.wantConf)
		}
	}
}

func TestPrimaryLanguage(t *testing.T) {
	for in, want := range map[string]string{
		"en-US": "en", " DE ": "de", "pt_BR": "pt", "zh-Hant-TW": "zh", "fil": "fil", "": "", "x": "", "en1": "", "<b>": "", "english": "", "und": "",
	} {
		if got := primaryLanguage(in); got != want {
			t.Errorf("primaryLanguage(%q) = %q, want %q", in, got, want)
		}
	}
}
