package parse

import (
	"strings"
	"testing"
)

// TestDetectLanguage: paragraphs in six languages and three scripts are
// identified; too little text, digits only and mixed noise are not.
func TestDetectLanguage(t *testing.T) {
	for _, tc := range []struct{ want, text string }{
		{"en", "The crawler keeps one copy of every page and follows the links of pages that are not duplicates of pages it has already seen."},
		{"de", "Der Crawler speichert von jeder Seite eine Kopie und folgt den Verweisen der Seiten, die keine Duplikate bereits gesehener Seiten sind."},
		{"fr", "Le robot garde une copie de chaque page et suit les liens des pages qui ne sont pas des doublons de pages déjà vues."},
		{"es", "El rastreador guarda una copia de cada página y sigue los enlaces de las páginas que no son duplicados de páginas ya vistas."},
		{"ru", "Поисковый робот хранит одну копию каждой страницы и переходит по ссылкам страниц, которые не являются дубликатами уже просмотренных. Это значит, что он не тратит время на копии, и при этом ничего не теряет: все, что есть в копии, есть и в оригинале."},
		{"ja", "クローラーはすべてのページのコピーを一つ保存し、すでに見たページの重複ではないページのリンクをたどります。"},
	} {
		code, conf, ok := DetectLanguage(tc.text)
		if !ok || code != tc.want {
			t.Errorf("%s text: got %q (confidence %.2f, ok %v)", tc.want, code, conf, ok)
		}
	}
	for _, text := range []string{"", "   ", "Home", "12 345 678 90 12 345 678 90", "x"} {
		if code, _, ok := DetectLanguage(text); ok || code != "" {
			t.Errorf("%q: detected %q, want nothing", text, code)
		}
	}
}

// TestDetectLanguageSample: only the first LanguageSample bytes are read (a
// German page with a long English tail is German), and the cut never splits
// a UTF-8 sequence.
func TestDetectLanguageSample(t *testing.T) {
	de := strings.Repeat("Über die Brücke gehen jeden Tag viele Menschen zur Arbeit in der Stadt, und sie ist auch für Radfahrer offen. ", 40)
	en := strings.Repeat("Many people walk over the bridge to work in the city every day. ", 400)
	if code, _, ok := DetectLanguage(de + en); !ok || code != "de" {
		t.Errorf("German head, English tail: %q, want de", code)
	}
	// Multi-byte runes across the cut: must not panic or return garbage.
	ru := strings.Repeat("ёжик ", LanguageSample)
	if code, _, ok := DetectLanguage(ru); ok && code == "" {
		t.Errorf("ok without a code")
	}
}
