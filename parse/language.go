package parse

import (
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LanguageSample is how much of a page's text DetectLanguage reads.
const LanguageSample = 4096

// DetectLanguage identifies the language of visible text, for the corpus
// export: it reads the first LanguageSample bytes and returns an ISO 639-1
// code with a confidence in [0, 1]; ok is false (and code "") when the text
// is too short or the evidence too weak.
//
// Two cheap steps, 30-80 µs a page (BenchmarkDetectLanguage; parsing the
// page costs about ten times that; a trigram identifier over 84 languages,
// whatlanggo, cost 1.25 ms a page on the corpus and was dropped):
//   - the script of the letters (Hangul, kana and Han weighted as three
//     letters each): Hangul is Korean, Han with kana Japanese, Han without
//     Chinese; Greek, Hebrew, Thai and Devanagari text is el, he, th and hi,
//     Arabic-script text ar, or fa and ur by the letters they add. The
//     confidence is the script's share of the letters.
//   - Latin and Cyrillic text is told apart by function words: the language
//     whose short list of frequent words (stopwords) covers most of the
//     sample wins if it has enough hits and clearly more of the words that
//     tell it from the runner-up (da and nb share most of theirs); Czech
//     function words with Slovak letters are Slovak.
//
// Limits: Marathi and Nepali come out as hi; languages without a list
// (Catalan, Macedonian, ...) as their nearest listed neighbour or nothing.
func DetectLanguage(text string) (code string, confidence float64, ok bool) {
	if len(text) > LanguageSample {
		cut := LanguageSample
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	var sc [numScripts]int
	letters := 0
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			i++
			if 'a' <= c|0x20 && c|0x20 <= 'z' {
				letters++
				sc[scriptLatin]++
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		if unicode.IsLetter(r) {
			letters++
			sc[scriptOf(r)]++
		}
	}
	if letters < 20 {
		return "", 0, false
	}
	// A Hangul, kana or Han character carries a syllable or a word, several
	// Latin letters' worth: weigh them so, or a Korean page quoting English
	// code would count as English.
	for _, s := range []script{scriptHangul, scriptKana, scriptHan} {
		letters += 2 * sc[s]
		sc[s] *= 3
	}
	// Japanese writes with kana and Han together: they compete as one.
	best := scriptLatin
	for s := range numScripts {
		if s != scriptKana && s != scriptHan && sc[s] > sc[best] {
			best = s
		}
	}
	if sc[scriptKana]+sc[scriptHan] > sc[best] {
		best = scriptHan
	}
	share := float64(sc[best]) / float64(letters)
	switch best {
	case scriptHangul:
		return "ko", share, share >= 0.3
	case scriptKana, scriptHan:
		// Japanese writes Han with kana; Chinese has no kana.
		cjk := sc[scriptKana] + sc[scriptHan]
		share = float64(cjk) / float64(letters)
		if sc[scriptKana]*10 >= cjk {
			return "ja", share, share >= 0.3
		}
		return "zh", share, share >= 0.3
	case scriptArabic:
		// Persian and Urdu add letters to the Arabic alphabet.
		switch {
		case strings.ContainsAny(text, "ٹڈڑںے"):
			return "ur", share, share >= 0.5
		case strings.ContainsAny(text, "پچژگکی"):
			return "fa", share, share >= 0.5
		}
		return "ar", share, share >= 0.5
	case scriptGreek, scriptHebrew, scriptThai, scriptDevanagari:
		return scriptLang[best], share, share >= 0.5
	case scriptOther:
		return "", 0, false
	}
	return byStopwords(strings.ToLower(text))
}

type script int

const (
	scriptLatin script = iota
	scriptCyrillic
	scriptGreek
	scriptHebrew
	scriptArabic
	scriptThai
	scriptDevanagari
	scriptHangul
	scriptKana
	scriptHan
	scriptOther
	numScripts
)

var scriptLang = [numScripts]string{scriptGreek: "el", scriptHebrew: "he", scriptThai: "th", scriptDevanagari: "hi"}

func scriptOf(r rune) script {
	switch {
	case r < 0x250:
		return scriptLatin
	case r >= 0x370 && r < 0x400:
		return scriptGreek
	case r >= 0x400 && r < 0x530:
		return scriptCyrillic
	case r >= 0x590 && r < 0x600:
		return scriptHebrew
	case r >= 0x600 && r < 0x700, r >= 0x750 && r < 0x780:
		return scriptArabic
	case r >= 0x900 && r < 0x980:
		return scriptDevanagari
	case r >= 0xE00 && r < 0xE80:
		return scriptThai
	case r >= 0x1E00 && r < 0x1F00:
		return scriptLatin
	case r >= 0x3040 && r < 0x3100, r >= 0x31F0 && r < 0x3200, r >= 0xFF66 && r < 0xFFA0:
		return scriptKana
	case unicode.Is(unicode.Hangul, r):
		return scriptHangul
	case unicode.Is(unicode.Han, r):
		return scriptHan
	}
	return scriptOther
}

// byStopwords scores lower-cased Latin or Cyrillic text by stopword hits.
func byStopwords(text string) (string, float64, bool) {
	var hits [len(stopLangs)]int
	var sets [1024]uint32 // the stopword sets of the first 1,024 hits
	nsets := 0
	words := 0
	start := -1 // of the current word
	for i := 0; i <= len(text); {
		letter, n := false, 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				letter = 'a' <= c && c <= 'z'
			} else {
				var r rune
				r, n = utf8.DecodeRuneInString(text[i:])
				letter = unicode.IsLetter(r)
			}
		}
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			words++
			if w := text[start:i]; len(w) <= maxStopword {
				if set := stopwords[w]; set != 0 {
					if nsets < len(sets) {
						sets[nsets] = set
						nsets++
					}
					for ; set != 0; set &= set - 1 {
						hits[bits.TrailingZeros32(set)]++
					}
				}
			}
			start = -1
		}
		i += n
	}
	if words < 8 {
		return "", 0, false
	}
	first, second := 0, -1
	for l := 1; l < len(hits); l++ {
		switch {
		case hits[l] > hits[first]:
			first, second = l, first
		case second < 0 || hits[l] > hits[second]:
			second = l
		}
	}
	// The margin counts only the words that tell the two best apart: lists
	// of close languages (da and nb, es and pt, ru and bg) share most words,
	// and a margin on all hits would grow with the shared ones.
	ex1, ex2 := 0, 0
	for _, set := range sets[:nsets] {
		in1, in2 := set>>first&1, set>>second&1
		ex1 += int(in1 &^ in2)
		ex2 += int(in2 &^ in1)
	}
	h1 := hits[first]
	// Function words are a third to a half of running text; a sample where
	// the best list covers under 10% is not in any of these languages (or
	// is a list of names, code, numbers).
	cover := float64(h1) / float64(words)
	conf := min(1, cover/0.3) * float64(ex1-ex2) / float64(ex1+ex2+1)
	if h1 < 4 || cover < 0.1 || ex1-ex2 < max(3, (ex1+ex2)/3) {
		return "", max(conf, 0), false
	}
	if stopLangs[first] == "cs" && strings.ContainsAny(text, "ľĺŕôä") {
		return "sk", conf, true // Slovak: Czech's function words, its own letters
	}
	return stopLangs[first], conf, true
}

// stopLangs are the languages told apart by stopwords; stopwords maps a
// word to the set of them (bit i = stopLangs[i]) whose list holds it.
var stopLangs = [...]string{"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl", "cs", "tr", "ro", "hu", "id", "ru", "uk", "bg"}

var stopwords = func() map[string]uint32 {
	lists := map[string]string{
		"en": "the and of to is in that it for with as was on are be this by not or from which an at have but you can will if their they has been these when there all would",
		"de": "der die und in den von zu zur das mit sich des auf für ist im dem nicht ein eine als auch es werden aus er hat dass sie nach wird bei einer um am sind noch wie einem über einen so zum oder kann wenn nur diese",
		"fr": "le la les de des et est un une du en que qui dans pour pas sur au avec ce il par sont plus ou ne se aux elle mais nous vous cette été être peut ces leur",
		"es": "el la los las de que y en un una es por con para no se del al lo como más pero sus le ya o este si porque esta entre cuando muy sin sobre también fue hay son",
		"it": "il di che è e la per un una in non sono del della le con si da dei delle gli nel alla più anche come ma questo essere ha se ci lo può questa quando degli",
		"pt": "o a os as de que e do da em um uma para com não é por mais dos das no na se como mas ao ele foi ou seu sua são também pelo pela isso este está quando",
		"nl": "de het een en van is dat op te in zijn voor met niet aan er die als ook maar om door worden wordt naar bij uit deze kan dan nog of hij zij heeft dit",
		"sv": "och att det som en på är av för med till den har de inte om ett jag men så kan vara eller från vid efter också när ska detta sig var blev några vad mycket",
		"da": "og at det som en på er af for med til den har de ikke om et jeg men så kan være eller fra ved efter også når skal dette sig var blev nogle hvad meget",
		"nb": "og at det som en på er av for med til den har de ikke om et jeg men så kan være eller fra ved etter også når skal dette seg var ble noen hva mye",
		"fi": "ja on ei se että hän oli ovat tai mutta kun kuin myös tämä joka sen niin jos voi vain jo mitä tässä ole sekä jotka kanssa",
		"pl": "i w na z się nie do to że jest o jak co od po przez dla ale są tak jego czy też tym może być jako oraz tylko już które który która",
		"cs": "a v se na je že to s z do o jsou pro k ve jako by ale jeho jak od po tak které který která také nebo být bylo již při jen",
		"tr": "ve bir bu da de için ile olarak daha çok en gibi ne olan o ama kadar sonra her değil var veya ya şu bunu ise tüm olduğu göre yeni kendi",
		"ro": "și şi de la în a cu pe că nu o un este din să se pentru mai care sau ca sunt fi au prin dar acest această fost",
		"hu": "a az és hogy nem is egy ez meg van de csak már mint vagy volt el ki még azt ha kell lesz mert után minden így között",
		"id": "yang dan di ini dengan untuk dari dalam tidak itu akan pada juga ke ada atau adalah oleh bisa dapat sebagai karena kami saya mereka telah",
		"ru": "и в не на что с по это как к из для он а то у но от же так о за все его только бы был при также или если может быть эти этот есть",
		"uk": "і в не на що з до це як та у для від по за він а але є його також або якщо може було які який яка ці цей при ще бути",
		"bg": "и в на да се от е за не с че по са как това към си до но или който която които може ще при също има бъде",
	}
	m := map[string]uint32{}
	for i, l := range stopLangs {
		for _, w := range strings.Fields(lists[l]) {
			m[w] |= 1 << i
			maxStopword = max(maxStopword, len(w))
		}
	}
	return m
}()

// maxStopword is the longest stopword in bytes: longer words are not looked up.
var maxStopword int
