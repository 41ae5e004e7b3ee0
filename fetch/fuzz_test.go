package fetch

import (
	"slices"
	"strings"
	"testing"
)

// FuzzRobots checks that any robots.txt response parses without panicking,
// that decisions are deterministic (the same for a second parse and for the
// rules rebuilt from a stored entry), and RFC 9309's status semantics: 4xx
// allows everything, 429 and 5xx disallow everything, and a 2xx file without
// a single Disallow line allows everything.
func FuzzRobots(f *testing.F) {
	seeds := []struct {
		status int
		body   string
		agent  string
		path   string
	}{
		{200, "User-agent: *\nDisallow: /private\nAllow: /private/ok\n", "horseshoe", "/private/x"},
		{200, "User-agent: horseshoe\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "horseshoe", "/a?b=c"},
		{200, "user-agent:*\ndisallow:/*.php$\ncrawl-delay: 2.5\nsitemap: http://h/s.xml\n", "Horseshoe", "/index.php"},
		{200, "User-agent: *\nDisallow: /%7Euser/\nDisallow: /a*b$\n", "x", "/~user/page"},
		{200, "\xef\xbb\xbfUser-agent: *\r\nDisallow: /\xff\xfe\r\n", "horseshoe", "/\xff"},
		{200, "User-agent: *\nDisallow:\n", "horseshoe", "/"},
		{200, strings.Repeat("Disallow: /a*b*c*d*e*f*g*\n", 50), "horseshoe", "/" + strings.Repeat("ab", 200)},
		{404, "User-agent: *\nDisallow: /\n", "horseshoe", "/"},
		{503, "", "horseshoe", "/"},
		{429, "", "horseshoe", "/x"},
	}
	for _, s := range seeds {
		f.Add(s.status, []byte(s.body), s.agent, s.path)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, agent, path string) {
		status = 100 + (status%500+500)%500 // 100..599
		r := ParseRobots(status, body)
		allowed := r.Allowed(agent, path)
		if again := r.Allowed(agent, path); again != allowed {
			t.Fatalf("Allowed changed between two calls: %v then %v", allowed, again)
		}
		if r2 := ParseRobots(status, body); r2.Allowed(agent, path) != allowed {
			t.Fatalf("a second parse decides differently")
		}
		stored := RobotsFromEntry(RobotsEntry{Status: status, Body: body}, 0)
		if stored.Allowed(agent, path) != allowed {
			t.Fatalf("rules rebuilt from a stored entry decide differently")
		}
		if d, ok := r.CrawlDelay(agent); ok && d < 0 {
			t.Fatalf("negative Crawl-delay %v", d)
		}
		r.Sitemaps()
		switch {
		case status == 429 || status >= 500:
			if allowed || !r.Unavailable() {
				t.Fatalf("status %d: allowed %v, unavailable %v; want everything disallowed", status, allowed, r.Unavailable())
			}
		case status >= 400:
			if !allowed {
				t.Fatalf("status %d: %q disallowed; 4xx allows everything", status, path)
			}
		case status >= 200 && status < 300:
			// The parser accepts Google's misspellings of Disallow too.
			lb := strings.ToLower(string(body))
			if !allowed && !slices.ContainsFunc([]string{"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"},
				func(k string) bool { return strings.Contains(lb, k) }) {
				t.Fatalf("%q disallowed by a file without any Disallow line", path)
			}
		}
	})
}
