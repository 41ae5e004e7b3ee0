package parse_test

import (
	"fmt"
	"net/url"

	"github.com/horseshoe-crawler/horseshoe/parse"
)

func ExampleParse() {
	page, _ := url.Parse("http://example.com/docs/intro.html")
	body := []byte(`<html lang="en"><head><title>Intro</title>
<meta name="robots" content="horseshoe: nofollow"></head>
<body><h1>Hello</h1><p>See <a href="next.html#top">the <b>next</b> page</a>.</p>
<script>ignored()</script></body></html>`)
	doc, err := parse.Parse(body, page, parse.Options{BotName: "horseshoe"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.Title, doc.Lang, doc.NoIndex, doc.NoFollow)
	for _, l := range doc.Links {
		fmt.Printf("%s %q\n", l.URL, l.Text)
	}
	fmt.Printf("%q\n", doc.Text)
	fmt.Printf("%q\n", doc.Tokens)
	// Output:
	// Intro en false true
	// http://example.com/docs/next.html "the next page"
	// "Hello See the next page."
	// ["hello" "see" "the" "next" "page"]
}

func ExampleTokenize() {
	fmt.Printf("%q\n", parse.Tokenize(nil, "Straße, STRASSE & ﬁnal ＡＢＣ-123: naïve café!"))
	// Output: ["strasse" "strasse" "final" "abc" "123" "naïve" "café"]
}

func ExampleRobotsDirectives() {
	noindex, nofollow := parse.RobotsDirectives("otherbot: none, horseshoe: noindex", "horseshoe")
	fmt.Println(noindex, nofollow)
	// Output: true false
}
