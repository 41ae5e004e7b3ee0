package parse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchTexts are the inputs of BenchmarkTokenize: plain English ASCII prose, the same
// prose lower-cased (the zero-allocation path), French, mixed-script text, Russian prose
// (capitalized sentences: one stretch of non-ASCII text) and Chinese and Japanese prose
// (full-width punctuation and digits).
var benchTexts = []struct {
	name string
	text string
}{
	{"ascii", strings.Repeat("Now is the time for all good men to come to the aid of the Party; HTTP/1.1 returned 404 (Not Found). ", 640)},
	{"ascii-lower", strings.Repeat("now is the time for all good men to come to the aid of the party; http/1.1 returned 404 (not found). ", 640)},
	{"french", strings.Repeat("Il a été conçu pour fonctionner sous forme de processus démon indépendant, à l'écoute des requêtes. ", 640)},
	{"mixed", strings.Repeat("Straße ﬁnancial ＦＵＬＬ naïve café, Привет мир, 中文文本 and plain ASCII words in between. ", 640)},
	{"russian", strings.Repeat("Москва — столица России. Город стоит на реке Москве, в центре Восточно-Европейской равнины. ", 400)},
	{"cjk", strings.Repeat("北京是中华人民共和国的首都，位于华北平原北部。２０２４年の人口は約２１００万人です。", 500)},
}

func BenchmarkTokenize(b *testing.B) {
	for _, bt := range benchTexts {
		b.Run(bt.name, func(b *testing.B) {
			dst := make([]string, 0, len(bt.text)/2)
			b.SetBytes(int64(len(bt.text)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				dst = Tokenize(dst[:0], bt.text)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, file := range []string{"git-gitdiffcore.html", "flink-zh-what-is-flink-ml.html"} {
		b.Run(file, func(b *testing.B) {
			body, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				b.Fatal(err)
			}
			u := mustURL(b, "http://127.0.0.5/v2.55/"+file)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Parse(body, u, Options{BotName: "horseshoe"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDetectLanguage: identifying a page's language from its text (the
// first LanguageSample bytes), per page.
func BenchmarkDetectLanguage(b *testing.B) {
	for _, bt := range benchTexts {
		b.Run(bt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				DetectLanguage(bt.text)
			}
		})
	}
}

// BenchmarkBuildRuneTable: the one-time cost of the rune table of Tokenize's
// non-ASCII path (built on the first non-ASCII stretch).
func BenchmarkBuildRuneTable(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		buildRuneTable()
	}
}
