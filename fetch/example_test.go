package fetch_test

import (
	"fmt"
	"net/url"

	"github.com/horseshoe-crawler/horseshoe/fetch"
)

func ExampleParseRobots() {
	body := []byte(`User-agent: *
Disallow: /private   # comments are ignored
Allow: /private/press-kit
Crawl-delay: 2.5

User-agent: horseshoe
Disallow: /*.pdf$
Sitemap: https://example.com/sitemap.xml
`)
	r := fetch.ParseRobots(200, body)
	u, _ := url.Parse("https://example.com/docs/manual.pdf?download=1")
	fmt.Println(r.Allowed("horseshoe", "/private/data"))     // the horseshoe group replaces "*"
	fmt.Println(r.Allowed("otherbot", "/private/data"))      // "*" applies
	fmt.Println(r.Allowed("otherbot", "/private/press-kit")) // longest match wins
	fmt.Println(r.Allowed("horseshoe", "/docs/manual.pdf"))
	fmt.Println(r.AllowedURL("horseshoe", u)) // "$" anchors: the query makes it a different path
	d, ok := r.CrawlDelay("otherbot")
	fmt.Println(d, ok)
	fmt.Println(r.Sitemaps())
	fmt.Println(fetch.ParseRobots(503, nil).Allowed("horseshoe", "/"))
	// Output:
	// true
	// false
	// true
	// false
	// true
	// 2.5s true
	// [https://example.com/sitemap.xml]
	// false
}

func ExamplePathAndQuery() {
	fmt.Println(fetch.PathAndQuery("http://example.com/a/b;p?q=1#frag"))
	fmt.Println(fetch.PathAndQuery("http://example.com"))
	// Output:
	// /a/b;p?q=1
	// /
}
