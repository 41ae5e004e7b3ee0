package parse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDetectLanguage: paragraphs in 24 languages and ten scripts, close
// pairs among them, are identified; too little text and digits are not.
func TestDetectLanguage(t *testing.T) {
	for _, tc := range []struct{ want, text string }{
		{"en", "The crawler keeps one copy of every page and follows the links of pages that are not duplicates of pages it has already seen."},
		{"de", "Der Crawler speichert von jeder Seite eine Kopie und folgt den Verweisen der Seiten, die keine Duplikate bereits gesehener Seiten sind."},
		{"fr", "Le robot garde une copie de chaque page et suit les liens des pages qui ne sont pas des doublons de pages déjà vues."},
		{"es", "El rastreador guarda una copia de cada página y sigue los enlaces de las páginas que no son duplicados de páginas ya vistas."},
		{"ru", "Поисковый робот хранит одну копию каждой страницы и переходит по ссылкам страниц, которые не являются дубликатами уже просмотренных. Это значит, что он не тратит время на копии, и при этом ничего не теряет: все, что есть в копии, есть и в оригинале."},
		{"ja", "クローラーはすべてのページのコピーを一つ保存し、すでに見たページの重複ではないページのリンクをたどります。"},
		// Japanese with Latin names in it: kana and Han count together against Latin.
		{"ja", "Apache HTTP Server のドキュメントです。設定ファイル httpd.conf の書き方と、モジュール mod_rewrite の使い方を説明します。"},
		{"ko", "크롤러는 모든 페이지의 사본을 하나 저장하고 이미 본 페이지의 중복이 아닌 페이지의 링크를 따라갑니다."},
		{"zh", "爬虫为每个页面保存一份副本，并跟踪那些不是已见页面重复的页面中的链接。"},
		{"el", "Ο ανιχνευτής κρατά ένα αντίγραφο κάθε σελίδας και ακολουθεί τους συνδέσμους των σελίδων που δεν είναι διπλότυπα."},
		{"he", "הסורק שומר עותק אחד של כל דף ועוקב אחרי הקישורים של דפים שאינם כפילויות של דפים שכבר נראו."},
		{"ar", "يحتفظ الزاحف بنسخة واحدة من كل صفحة ويتبع روابط الصفحات التي ليست نسخا مكررة من صفحات سبق رؤيتها."},
		{"fa", "خزنده یک نسخه از هر صفحه را نگه می\u200cدارد و پیوندهای صفحه\u200cهایی را دنبال می\u200cکند که تکراری نیستند."},
		{"th", "โปรแกรมรวบรวมข้อมูลเก็บสำเนาหนึ่งชุดของทุกหน้าและติดตามลิงก์ของหน้าที่ไม่ซ้ำกัน"},
		{"hi", "क्रॉलर हर पृष्ठ की एक प्रति रखता है और उन पृष्ठों के लिंक का अनुसरण करता है जो पहले देखे गए पृष्ठों की प्रतियां नहीं हैं।"},
		// Close pairs: the margin counts the words that tell them apart.
		{"da", "Crawleren gemmer en kopi af hver side og følger linkene på de sider, som ikke er dubletter af sider, den allerede har set. Det betyder, at den ikke bruger tid på kopier, og at intet går tabt, fordi alt hvad der står i en kopi, også står i originalen, og det er meget hurtigere."},
		{"nb", "Søkeroboten lagrer en kopi av hver side og følger lenkene på sidene som ikke er duplikater av sider den allerede har sett. Det betyr at den ikke bruker tid på kopier, og at ingenting går tapt, fordi alt som står i en kopi, også står i originalen, og det er mye raskere."},
		{"sv", "Sökroboten sparar en kopia av varje sida och följer länkarna på de sidor som inte är dubbletter av sidor den redan har sett. Det betyder att den inte lägger tid på kopior och att ingenting går förlorat."},
		{"pt", "O rastreador guarda uma cópia de cada página e segue os links das páginas que não são duplicadas de páginas já vistas. Isso significa que não perde tempo com cópias e que nada se perde."},
		{"it", "Il crawler conserva una copia di ogni pagina e segue i collegamenti delle pagine che non sono duplicati di pagine già viste. Questo significa che non perde tempo con le copie e che niente va perso."},
		{"nl", "De crawler bewaart één kopie van elke pagina en volgt de links van pagina's die geen duplicaten zijn van pagina's die al gezien zijn. Dit betekent dat hij geen tijd aan kopieën besteedt en dat er niets verloren gaat."},
		{"pl", "Robot zapisuje jedną kopię każdej strony i podąża za linkami stron, które nie są duplikatami stron już widzianych. To oznacza, że nie traci czasu na kopie i że nic nie ginie, bo wszystko, co jest w kopii, jest też w oryginale."},
		{"tr", "Tarayıcı her sayfanın bir kopyasını saklar ve daha önce görülmüş sayfaların kopyası olmayan sayfaların bağlantılarını izler. Bu, kopyalar için zaman harcamadığı ve hiçbir şeyin kaybolmadığı anlamına gelir, çünkü bir kopyada olan her şey asıl sayfada da var."},
		{"uk", "Пошуковий робот зберігає одну копію кожної сторінки і переходить за посиланнями сторінок, які не є дублікатами вже переглянутих. Це означає, що він не витрачає час на копії, і при цьому нічого не втрачає: усе, що є в копії, є і в оригіналі."},
		{"bg", "Роботът пази по едно копие от всяка страница и следва връзките на страниците, които не са дубликати на вече видени страници. Това означава, че той не губи време за копия и при това нищо не се губи, защото всичко, което е в копието, е и в оригинала."},
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
	// Russian text whose 4 KB cut falls inside a two-byte letter: still
	// Russian, and the cut text is valid UTF-8.
	ru := "xx" + strings.Repeat("Это значит, что он не тратит время на копии и при этом ничего не теряет. ", 80)
	if utf8.RuneStart(ru[LanguageSample]) {
		t.Fatal("the sample's cut should fall inside a letter")
	}
	if code, _, ok := DetectLanguage(ru); !ok || code != "ru" {
		t.Errorf("Russian cut mid-rune: %q, want ru", code)
	}
}
