//go:build go1.25

package crawl_test

// The politeness proof of issue #5: real crawls through the real engine
// against servers that log every request's arrival and completion. The
// servers are on an in-memory network (internal/memnet) and every crawl runs
// in a testing/synctest bubble, so the times logged are the bubble's clock:
// a delay, Crawl-delay, Retry-After or robots_retry is asserted as an exact
// virtual time, never within a noise margin of the wall clock. (t.Run
// cannot be called in a bubble: tests with subtests crawl in the bubble and
// assert after it.)

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/memnet"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRobotsTxtRulesObeyed: no URL that robots.txt disallows is ever
// requested; allowed ones (including an Allow override inside a disallowed
// directory) are fetched; the disallowed ones are recorded as such.
func TestRobotsTxtRulesObeyed(t *testing.T) {
	var log hitLog
	var a, b server
	var res crawlResult
	// The "*" group disallows everything: it must be ignored, since a group
	// names our product token.
	robotsA := "User-agent: *\nDisallow: /\n\n" +
		"User-agent: Horseshoe\n" +
		"Disallow: /private/\n" +
		"Allow: /private/public/\n" +
		"Disallow: /*.pdf$\n" +
		"Disallow: /*?session=\n" +
		"Disallow: /archive/*/old\n"
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		a = startMemServer(n, "127.0.0.21", (&site{Pages: map[string]page{
			"/robots.txt": {Body: robotsA},
			"/": {Body: htmlPage("home", "",
				"/private/secret.html", "/private/public/open.html", "/report.pdf", "/report.pdf.html",
				"/list?session=abc", "/list?page=2", "/archive/2020/old.html", "/archive/2020/new.html")},
			"/private/secret.html":      {Body: htmlPage("secret", "")},
			"/private/public/open.html": {Body: htmlPage("open", "")},
			"/report.pdf":               {Body: "%PDF-1.4", Header: http.Header{"Content-Type": {"application/pdf"}}},
			"/report.pdf.html":          {Body: htmlPage("reporthtml", "")},
			"/list?session=abc":         {Body: htmlPage("session", "")},
			"/list?page=2":              {Body: htmlPage("pagetwo", "")},
			"/archive/2020/old.html":    {Body: htmlPage("old", "")},
			"/archive/2020/new.html":    {Body: htmlPage("new", "")},
		}}).handler(), &log)
		// Only "/" itself is allowed, by an anchored Allow that outranks Disallow: /.
		b = startMemServer(n, "127.0.0.22", (&site{Pages: map[string]page{
			"/robots.txt":  {Body: "User-agent: *\nDisallow: /\nAllow: /$\n"},
			"/":            {Body: htmlPage("broot", "", "/inner.html", "/index.html")},
			"/inner.html":  {Body: htmlPage("inner", "")},
			"/index.html":  {Body: htmlPage("bindex", "")},
			"/unlinked.md": {Body: "never linked"},
		}}).handler(), &log)

		res = runCrawl(t, crawlConfig{Net: n, Delay: 20 * time.Millisecond}, a.Base("127.0.0.21")+"/", b.Base("127.0.0.22")+"/")
	})

	tests := []struct {
		srv        server
		name       string
		requested  []string // exactly these, in any order
		disallowed []string // recorded as robots_disallowed, never requested
	}{
		{a, "127.0.0.21",
			[]string{"/robots.txt", "/", "/private/public/open.html", "/report.pdf.html", "/list?page=2", "/archive/2020/new.html"},
			[]string{"/private/secret.html", "/report.pdf", "/list?session=abc", "/archive/2020/old.html"}},
		{b, "127.0.0.22",
			[]string{"/robots.txt", "/"},
			[]string{"/inner.html", "/index.html"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := paths(log.byHost(tt.srv.HostPort(tt.name)))
			sort.Strings(got)
			want := slices.Clone(tt.requested)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("requested %q\nwant      %q", got, want)
			}
			if n := strings.Count(strings.Join(got, " "), "/robots.txt"); n != 1 {
				t.Errorf("robots.txt requested %d times, want 1 (cached)", n)
			}
			for _, p := range tt.disallowed {
				pg := res.page(t, tt.srv.Base(tt.name)+p)
				if pg.Class != storage.ClassRobotsDisallowed {
					t.Errorf("%s: class %q, want %q", p, pg.Class, storage.ClassRobotsDisallowed)
				}
			}
			for _, p := range tt.requested {
				if p == "/robots.txt" {
					continue
				}
				if pg := res.page(t, tt.srv.Base(tt.name)+p); pg.Status != http.StatusOK {
					t.Errorf("%s: status %d, want 200 (class %q, %s)", p, pg.Status, pg.Class, pg.Error)
				}
			}
		})
	}

	// Independently of the lists above: every request the servers saw is
	// allowed by the robots.txt they served.
	rules := map[string]*fetch.Robots{
		a.HostPort("127.0.0.21"): fetch.ParseRobots(200, []byte(robotsA)),
		b.HostPort("127.0.0.22"): fetch.ParseRobots(200, []byte("User-agent: *\nDisallow: /\nAllow: /$\n")),
	}
	for _, h := range log.all() {
		if h.Path != "/robots.txt" && !rules[h.Host].Allowed(robotsAgent, h.Path) {
			t.Errorf("disallowed URL requested: %s%s", h.Host, h.Path)
		}
	}
}

// TestPolitenessGaps crawls hosts with different delays at once and prints,
// per host and per shared IP, the measured minimum gap between request
// arrivals next to the configured one. A request never arrives sooner than
// the delay after the previous one of its host and IP completed, and a
// sequence with requests waiting is paced at exactly that delay: the
// crawler's delay, a Crawl-delay over it, a Crawl-delay capped at max_delay
// (a cap, not a floor: 60 s is not honoured in full). The robots.txt
// request counts.
func TestPolitenessGaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const delay = 150 * time.Millisecond
		const maxDelay = 500 * time.Millisecond
		var log hitLog
		fanout := func(prefix string, n int, robots string) *site {
			pages := map[string]page{"/robots.txt": {Body: robots}}
			var links []string
			for i := range n {
				p := "/" + prefix + string(rune('a'+i)) + ".html"
				links = append(links, p)
				pages[p] = page{Body: htmlPage(prefix+string(rune('a'+i)), "")}
			}
			pages["/"] = page{Body: htmlPage(prefix+"root", "", links...)}
			return &site{Pages: pages, Latency: 10 * time.Millisecond}
		}
		plain := startMemServer(n, "127.0.0.31", fanout("plain", 6, "User-agent: *\nDisallow:\n").handler(), &log)
		slow := startMemServer(n, "127.0.0.32", fanout("slow", 3, "User-agent: *\nCrawl-delay: 0.4\n").handler(), &log)
		capped := startMemServer(n, "127.0.0.33", fanout("capped", 2, "User-agent: horseshoe\nCrawl-delay: 60\n").handler(), &log)
		// Two names, one IP: localhost and 127.0.0.1 share one politeness budget.
		shared := startMemServer(n, "127.0.0.1", fanout("shared", 3, "User-agent: *\nAllow: /\n").handler(), &log)

		start := time.Now()
		res := runCrawl(t, crawlConfig{Net: n, Delay: delay, MaxDelay: maxDelay, Workers: 6},
			plain.Base("127.0.0.31")+"/", slow.Base("127.0.0.32")+"/", capped.Base("127.0.0.33")+"/",
			shared.Base("localhost")+"/", shared.Base("127.0.0.1")+"/")

		rows := []struct {
			what     string
			hits     []hit
			want     time.Duration
			requests int
			exact    bool // paced at exactly want (false: a host taking turns with another on its IP)
		}{
			{"host " + plain.HostPort("127.0.0.31") + " (delay)", log.byHost(plain.HostPort("127.0.0.31")), delay, 8, true},
			{"host " + slow.HostPort("127.0.0.32") + " (Crawl-delay 0.4)", log.byHost(slow.HostPort("127.0.0.32")), 400 * time.Millisecond, 5, true},
			{"host " + capped.HostPort("127.0.0.33") + " (Crawl-delay 60, capped)", log.byHost(capped.HostPort("127.0.0.33")), maxDelay, 4, true},
			{"host " + shared.HostPort("localhost"), log.byHost(shared.HostPort("localhost")), delay, 5, false},
			{"host " + shared.HostPort("127.0.0.1"), log.byHost(shared.HostPort("127.0.0.1")), delay, 5, false},
			{"IP 127.0.0.1 (localhost + 127.0.0.1)", log.byIP("127.0.0.1"), delay, 10, true},
		}
		t.Logf("crawl took %v, %d requests", time.Since(start).Round(time.Millisecond), res.Requests)
		// The capped Crawl-delay is reported, with what was asked and applied.
		capNote := false
		for _, n := range res.Notes {
			if n.Kind == "crawl_delay_capped" && strings.HasPrefix(n.Host, "127.0.0.33") {
				capNote = strings.Contains(n.Detail, "1m0s") && strings.Contains(n.Detail, maxDelay.String())
			}
			if n.Kind == "crawl_delay_capped" && !strings.HasPrefix(n.Host, "127.0.0.33") {
				t.Errorf("host note for a Crawl-delay that was not capped: %+v", n)
			}
		}
		if !capNote {
			t.Errorf("the capped Crawl-delay of 127.0.0.33 is not in the report's host notes: %+v", res.Notes)
		}
		t.Logf("%-58s %10s %12s %12s %8s", "sequence", "configured", "min arrival", "min idle", "requests")
		for _, r := range rows {
			assert := assertPaced
			if r.exact {
				assert = assertPacedExact
			}
			s := assert(t, r.what, r.hits, r.want)
			t.Logf("%-58s %10v %12v %12v %8d", r.what, r.want, s.MinArrive.Round(100*time.Microsecond),
				s.MinIdle.Round(100*time.Microsecond), s.Requests)
			if s.Requests != r.requests {
				t.Errorf("%s: %d requests, want %d: %q", r.what, s.Requests, r.requests, paths(r.hits))
			}
			if len(r.hits) > 0 && r.hits[0].Path != "/robots.txt" {
				t.Errorf("%s: first request %s, want /robots.txt", r.what, r.hits[0].Path)
			}
		}
	})
}

// TestHugeCrawlDelayCapped: a Crawl-delay beyond a day, beyond what a
// time.Duration holds, or beyond float64 is a request to come rarely: the
// requests of such a host are spaced by max_delay (not by the crawler's own
// delay, as when such values were dropped) and the cap is noted in the report.
// A negative or garbage value is ignored: the crawler's delay applies.
func TestHugeCrawlDelayCapped(t *testing.T) {
	const delay = 20 * time.Millisecond
	const maxDelay = 300 * time.Millisecond
	var log hitLog
	hosts := []struct {
		ip, crawlDelay string
		want           time.Duration // gap between requests
		note           string        // requested delay in the cap note; "" for no note
	}{
		{"127.0.0.36", "99999", maxDelay, (99999 * time.Second).String()},
		// Beyond what a time.Duration holds: the note gives the value as written, not the
		// duration it saturates to.
		{"127.0.0.37", "1e12", maxDelay, "Crawl-delay 1e12 s capped"},
		{"127.0.0.38", "1e400", maxDelay, "Crawl-delay 1e400 s capped"},
		{"127.0.0.40", "1e24", maxDelay, "Crawl-delay 1e24 s capped"},
		{"127.0.0.41", "inf", maxDelay, "Crawl-delay inf s capped"},
		{"127.0.0.39", "-5", delay, ""},
	}
	var seeds []string
	srvs := make([]server, len(hosts))
	var res crawlResult
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		for i, h := range hosts {
			srvs[i] = startMemServer(n, h.ip, (&site{Pages: map[string]page{
				"/robots.txt": {Body: "User-agent: *\nCrawl-delay: " + h.crawlDelay + "\n"},
				"/":           {Body: htmlPage("root"+h.ip, "", "/a.html", "/b.html")},
				"/a.html":     {Body: htmlPage("a"+h.ip, "")},
				"/b.html":     {Body: htmlPage("b"+h.ip, "")},
			}}).handler(), &log)
			seeds = append(seeds, srvs[i].Base(h.ip)+"/")
		}
		res = runCrawl(t, crawlConfig{Net: n, Delay: delay, MaxDelay: maxDelay, Workers: 4}, seeds...)
	})
	for i, h := range hosts {
		t.Run("Crawl-delay "+h.crawlDelay, func(t *testing.T) {
			hits := log.byHost(srvs[i].HostPort(h.ip))
			if len(hits) != 4 {
				t.Fatalf("%d requests, want 4 (robots.txt, /, /a.html, /b.html): %q", len(hits), paths(hits))
			}
			// The cap is a cap: the requests are paced at max_delay exactly, not more.
			assertPacedExact(t, h.ip, hits, h.want)
			var note string
			for _, n := range res.Notes {
				if n.Kind == "crawl_delay_capped" && strings.HasPrefix(n.Host, h.ip) {
					note = n.Detail
				}
			}
			switch {
			case h.note == "" && note != "":
				t.Errorf("cap note for an ignored Crawl-delay: %q", note)
			case h.note != "" && !(strings.Contains(note, h.note) && strings.Contains(note, maxDelay.String())):
				t.Errorf("cap note %q, want the requested %s capped at %s", note, h.note, maxDelay)
			}
		})
	}
}

// TestOneRequestInFlightPerHostAndIP: with many workers and two host names on
// one IP, the two names' request intervals never overlap and their arrivals
// are spaced by the delay; every host also has one request in flight at most.
func TestOneRequestInFlightPerHostAndIP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const delay = 100 * time.Millisecond
		var log hitLog
		mk := func(prefix string) *site {
			pages := map[string]page{"/robots.txt": {Status: http.StatusNotFound, Body: "none"}}
			var links []string
			for i := range 5 {
				p := "/" + prefix + string(rune('a'+i)) + ".html"
				links = append(links, p)
				pages[p] = page{Body: htmlPage(prefix+string(rune('a'+i)), "")}
			}
			pages["/"] = page{Body: htmlPage(prefix+"root", "", links...)}
			// Slow responses make the in-flight windows wide, so that an
			// overlap cannot hide.
			return &site{Pages: pages, Latency: 60 * time.Millisecond}
		}
		shared := startMemServer(n, "127.0.0.1", mk("one").handler(), &log)
		other := startMemServer(n, "127.0.0.41", mk("two").handler(), &log)

		runCrawl(t, crawlConfig{Net: n, Delay: delay, Workers: 8},
			shared.Base("localhost")+"/", shared.Base("127.0.0.1")+"/", other.Base("127.0.0.41")+"/")

		for _, name := range []string{"localhost", "127.0.0.1"} {
			hits := log.byHost(shared.HostPort(name))
			if len(hits) != 7 {
				t.Errorf("%s: %d requests, want 7 (robots.txt, /, 5 pages): %q", name, len(hits), paths(hits))
			}
		}
		assertPacedExact(t, "IP 127.0.0.1", log.byIP("127.0.0.1"), delay)
		assertPacedExact(t, "host 127.0.0.41", log.byIP("127.0.0.41"), delay)
		// Different IPs are independent: the crawl must not have serialised
		// them (their requests do overlap in time at least once).
		if !anyOverlap(log.byIP("127.0.0.1"), log.byIP("127.0.0.41")) {
			t.Errorf("no request to 127.0.0.41 was ever in flight together with one to 127.0.0.1: hosts on different IPs were serialised")
		}
	})
}

// TestSharedIPHostFoundByLink: a host name first met as a link (not a seed)
// shares the politeness budget of its IP from its very first request, here
// the robots.txt request that follows right after the page that linked to it.
func TestSharedIPHostFoundByLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const delay = 150 * time.Millisecond
		var log hitLog
		var srv server
		mk := func(name string) http.Handler {
			pages := map[string]page{"/robots.txt": {Status: http.StatusNotFound}}
			var links []string
			for i := range 3 {
				p := "/" + name + string(rune('a'+i)) + ".html"
				links = append(links, p)
				pages[p] = page{Body: htmlPage(name+string(rune('a'+i)), "")}
			}
			return (&site{Pages: pages, Dynamic: func(path string, _ int) (page, bool) {
				if path != "/" {
					return page{}, false
				}
				// The seed's root links to the other name of the same IP.
				return page{Body: htmlPage(name+"root", "", append(links, srv.Base("localhost")+"/")...)}, true
			}}).handler()
		}
		byName := map[string]http.Handler{"localhost": mk("viaLink"), "127.0.0.1": mk("seed")}
		srv = startMemServer(n, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name, _, _ := strings.Cut(r.Host, ":")
			byName[name].ServeHTTP(w, r)
		}), &log)

		runCrawl(t, crawlConfig{Net: n, Delay: delay, Workers: 4, ScopeAny: true}, srv.Base("127.0.0.1")+"/")

		if n := len(log.byHost(srv.HostPort("localhost"))); n != 5 {
			t.Errorf("localhost: %d requests, want 5 (robots.txt, /, 3 pages)", n)
		}
		assertPacedExact(t, "IP 127.0.0.1", log.byIP("127.0.0.1"), delay)
	})
}

func anyOverlap(a, b []hit) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Arrive.Before(y.Done) && y.Arrive.Before(x.Done) {
				return true
			}
		}
	}
	return false
}

// TestRetryAfterRespected: a 429 with Retry-After (delta-seconds and
// HTTP-date) holds the host back at least that long after the response, and
// the page is fetched when retried.
func TestRetryAfterRespected(t *testing.T) {
	var log hitLog
	var dateRetry time.Time // the instant the HTTP-date form named
	s := &site{
		Pages: map[string]page{
			"/robots.txt": {Status: http.StatusNotFound},
			"/":           {Body: htmlPage("root", "", "/limited.html", "/dated.html", "/after.html")},
			"/after.html": {Body: htmlPage("after", "")},
		},
		Dynamic: func(path string, n int) (page, bool) {
			switch {
			case path == "/limited.html" && n == 1:
				return page{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}}, true
			case path == "/limited.html":
				return page{Body: htmlPage("limited", "")}, true
			case path == "/dated.html" && n == 1:
				// HTTP-date has one-second resolution: the instant is
				// 1 to 2 s away.
				dateRetry = time.Now().Add(2 * time.Second).Truncate(time.Second)
				return page{Status: http.StatusServiceUnavailable,
					Header: http.Header{"Retry-After": {dateRetry.UTC().Format(http.TimeFormat)}}}, true
			case path == "/dated.html":
				return page{Body: htmlPage("dated", "")}, true
			}
			return page{}, false
		},
	}
	var srv server
	var res crawlResult
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		srv = startMemServer(n, "127.0.0.51", s.handler(), &log)
		res = runCrawl(t, crawlConfig{Net: n, Delay: 50 * time.Millisecond, Workers: 2, BackoffBase: 50 * time.Millisecond},
			srv.Base("127.0.0.51")+"/")
	})
	base := srv.Base("127.0.0.51")

	hits := log.byHost(srv.HostPort("127.0.0.51"))
	assertPacedExact(t, "host 127.0.0.51", hits, 50*time.Millisecond)
	tests := []struct {
		path   string
		status int
		until  func(h hit) time.Time // the next arrival after the refusal h: exactly when Retry-After allows
	}{
		{"/limited.html", http.StatusTooManyRequests, func(h hit) time.Time { return h.Done.Add(time.Second) }},
		{"/dated.html", http.StatusServiceUnavailable, func(hit) time.Time { return dateRetry }},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			i := slices.IndexFunc(hits, func(h hit) bool { return h.Path == tt.path })
			if i < 0 || hits[i].Status != tt.status {
				t.Fatalf("first request of %s missing or not %d: %q", tt.path, tt.status, paths(hits))
			}
			if i+1 >= len(hits) {
				t.Fatalf("nothing requested after the %d", tt.status)
			}
			next := hits[i+1]
			if until := tt.until(hits[i]); !next.Arrive.Equal(until) {
				t.Errorf("%s%s arrived %v after the %d of %s, want exactly when Retry-After allowed (%v after):%s",
					next.Host, next.Path, next.Arrive.Sub(hits[i].Done), tt.status, tt.path, until.Sub(hits[i].Done), timeline(hits))
			}
			var retries int
			for _, h := range hits[i+1:] {
				if h.Path == tt.path {
					retries++
				}
			}
			if retries != 1 {
				t.Errorf("%s retried %d times, want 1", tt.path, retries)
			}
			if p := res.page(t, base+tt.path); p.Status != http.StatusOK || p.Class != storage.ClassUnique {
				t.Errorf("%s recorded with status %d class %q, want 200 %q", tt.path, p.Status, p.Class, storage.ClassUnique)
			}
		})
	}
	if len(res.GiveUps) != 0 {
		t.Errorf("hosts given up: %+v", res.GiveUps)
	}
}

// TestRobotsUnavailableBlocksHost: while robots.txt answers 5xx no page of the
// host is requested; robots.txt is retried after robots_retry, and once it
// recovers the host's allowed pages are crawled (RFC 9309 section 2.3.1.3).
func TestRobotsUnavailableBlocksHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const retry = 300 * time.Millisecond
		const failures = 2
		var log hitLog
		robots := "User-agent: *\nDisallow: /blocked.html\n"
		s := &site{
			Pages: map[string]page{
				"/":             {Body: htmlPage("root", "", "/a.html", "/blocked.html")},
				"/a.html":       {Body: htmlPage("a", "")},
				"/blocked.html": {Body: htmlPage("blocked", "")},
			},
			Dynamic: func(path string, n int) (page, bool) {
				if path != "/robots.txt" {
					return page{}, false
				}
				if n <= failures {
					return page{Status: http.StatusServiceUnavailable, Body: "down for maintenance"}, true
				}
				return page{Body: robots}, true
			},
		}
		srv := startMemServer(n, "127.0.0.52", s.handler(), &log)
		// A healthy host in the same crawl must not be held up by the broken one.
		healthy := startMemServer(n, "127.0.0.53", (&site{Pages: map[string]page{
			"/robots.txt": {Body: "User-agent: *\nDisallow:\n"},
			"/":           {Body: htmlPage("healthy", "", "/h.html")},
			"/h.html":     {Body: htmlPage("hpage", "")},
		}}).handler(), &log)
		base := srv.Base("127.0.0.52")
		res := runCrawl(t, crawlConfig{Net: n, Delay: 50 * time.Millisecond, RobotsRetry: retry, BackoffBase: 50 * time.Millisecond,
			Timeout: 10 * time.Second}, base+"/", healthy.Base("127.0.0.53")+"/")

		hits := log.byHost(srv.HostPort("127.0.0.52"))
		assertPacedExact(t, "host 127.0.0.52", hits, 50*time.Millisecond)
		var robotsHits []hit
		for _, h := range hits {
			if h.Path == "/robots.txt" {
				robotsHits = append(robotsHits, h)
			}
		}
		if len(robotsHits) != failures+1 {
			t.Fatalf("robots.txt requested %d times, want %d (%d failures, then success): %q",
				len(robotsHits), failures+1, failures, paths(hits))
		}
		recovered := robotsHits[failures]
		for _, h := range hits {
			if h.Path != "/robots.txt" && h.Arrive.Before(recovered.Done) {
				t.Errorf("%s requested while robots.txt was unavailable", h.Path)
			}
		}
		for i := 1; i < len(robotsHits); i++ {
			if g := robotsHits[i].Arrive.Sub(robotsHits[i-1].Done); g != retry {
				t.Errorf("robots.txt retried %v after the failure, want robots_retry %v exactly:%s", g, retry, timeline(hits))
			}
		}
		want := map[string]storage.Class{"/": storage.ClassUnique, "/a.html": storage.ClassUnique, "/blocked.html": storage.ClassRobotsDisallowed}
		for _, p := range []string{"/", "/a.html", "/blocked.html"} {
			if got := res.page(t, base+p); got.Class != want[p] {
				t.Errorf("%s: class %q (%s), want %q", p, got.Class, got.Error, want[p])
			}
		}
		if slices.Contains(paths(hits), "/blocked.html") {
			t.Errorf("/blocked.html requested although the recovered robots.txt disallows it")
		}
		if got := paths(log.byHost(healthy.HostPort("127.0.0.53"))); len(got) != 3 {
			t.Errorf("healthy host: requested %q, want robots.txt, / and /h.html", got)
		}
	})
}

// TestRobotsUnavailableHoldsOnlyThatHost: on a shared IP, one name whose
// robots.txt fails is held until it recovers, but the other name keeps its
// normal pace: robots_retry blocks a host, not its IP (shared hosting puts
// thousands of sites on one address).
func TestRobotsUnavailableHoldsOnlyThatHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		const retry = time.Second
		const delay = 50 * time.Millisecond
		var log hitLog
		broken := &site{
			Pages: map[string]page{
				"/":       {Body: htmlPage("brokenroot", "", "/b.html")},
				"/b.html": {Body: htmlPage("brokenb", "")},
			},
			Dynamic: func(path string, n int) (page, bool) {
				if path == "/robots.txt" && n == 1 {
					return page{Status: http.StatusServiceUnavailable}, true
				}
				return page{}, false
			},
		}
		healthyPages := map[string]page{"/robots.txt": {Status: http.StatusNotFound}}
		var links []string
		for i := range 6 {
			p := "/h" + string(rune('a'+i)) + ".html"
			links = append(links, p)
			healthyPages[p] = page{Body: htmlPage("healthy"+string(rune('a'+i)), "")}
		}
		healthyPages["/"] = page{Body: htmlPage("healthyroot", "", links...)}
		bh, hh := broken.handler(), (&site{Pages: healthyPages}).handler()
		srv := startMemServer(n, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Host, "localhost:") {
				bh.ServeHTTP(w, r)
				return
			}
			hh.ServeHTTP(w, r)
		}), &log)

		res := runCrawl(t, crawlConfig{Net: n, Delay: delay, RobotsRetry: retry, BackoffBase: delay, Timeout: 10 * time.Second},
			srv.Base("localhost")+"/", srv.Base("127.0.0.1")+"/")

		assertPacedExact(t, "IP 127.0.0.1", log.byIP("127.0.0.1"), delay)
		healthy := log.byHost(srv.HostPort("127.0.0.1"))
		if len(healthy) != 8 {
			t.Errorf("127.0.0.1: %d requests, want 8: %q", len(healthy), paths(healthy))
		}
		var maxGap time.Duration
		for i := 1; i < len(healthy); i++ {
			maxGap = max(maxGap, healthy[i].Arrive.Sub(healthy[i-1].Arrive))
		}
		if maxGap >= retry/2 {
			t.Errorf("127.0.0.1 waited %v between two requests: held back by localhost's unavailable robots.txt (robots_retry %v)",
				maxGap.Round(time.Millisecond), retry)
		}
		if p := res.page(t, srv.Base("localhost")+"/b.html"); p.Class != storage.ClassUnique {
			t.Errorf("localhost/b.html: class %q, want %q after robots.txt recovered", p.Class, storage.ClassUnique)
		}
	})
}

// TestRobotsUnavailableForeverGivesUp: a host whose robots.txt never
// recovers gets no page request, and the crawl still ends.
func TestRobotsUnavailableForeverGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var log hitLog
		srv := startMemServer(n, "127.0.0.54", (&site{Pages: map[string]page{
			"/robots.txt": {Status: http.StatusInternalServerError},
			"/":           {Body: htmlPage("never", "", "/x.html")},
			"/x.html":     {Body: htmlPage("neverx", "")},
		}}).handler(), &log)
		res := runCrawl(t, crawlConfig{Net: n, Delay: 20 * time.Millisecond, RobotsRetry: 100 * time.Millisecond,
			BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, MaxFailures: 3, Timeout: 10 * time.Second},
			srv.Base("127.0.0.54")+"/")
		var robotsHits int
		for _, h := range log.all() {
			if h.Path != "/robots.txt" {
				t.Errorf("%s requested although robots.txt never answered", h.Path)
				continue
			}
			robotsHits++
		}
		if robotsHits < 2 {
			t.Errorf("robots.txt requested %d times, want it retried after robots_retry (RFC 9309: disallowed until it recovers)", robotsHits)
		}
		// The host ends either given up (with a reason) or with its URLs
		// recorded as disallowed; never as fetched.
		host := srv.HostPort("127.0.0.54")
		givenUp := res.GiveUps[host] != ""
		if p := res.Pages[srv.Base("127.0.0.54")+"/"]; p != nil && p.Class != storage.ClassRobotsDisallowed {
			t.Errorf("/ recorded with class %q status %d, want robots_disallowed or not recorded", p.Class, p.Status)
		} else if p == nil && !givenUp {
			t.Errorf("/ neither recorded nor its host given up: %+v", res.GiveUps)
		}
		if givenUp {
			reported := false
			for _, n := range res.Notes {
				reported = reported || (n.Host == host && n.Kind == "gave_up" && strings.Contains(n.Detail, "robots.txt"))
			}
			if !reported {
				t.Errorf("give-up of %s not in the report's host notes: %+v", host, res.Notes)
			}
		}
	})
}

// TestMetaRobotsAndNofollow: meta robots and X-Robots-Tag nofollow stop link
// following (noindex alone does not); rel=nofollow links are skipped unless
// follow_nofollow is set; directives for other agents are ignored.
func TestMetaRobotsAndNofollow(t *testing.T) {
	mk := func() *site {
		return &site{Pages: map[string]page{
			"/robots.txt": {Status: http.StatusNotFound},
			"/": {Body: htmlPage("root", "", "/meta-nofollow.html", "/meta-none.html", "/meta-noindex.html",
				"/meta-bot.html", "/meta-otherbot.html", "/xrt-nofollow.html", "/xrt-otheragent.html",
				"/xrt-two.html", "/rel.html")},
			"/meta-nofollow.html":  {Body: htmlPage("mnf", `<meta name="robots" content="nofollow">`, "/s1.html")},
			"/meta-none.html":      {Body: htmlPage("mnone", `<meta name="ROBOTS" content="none">`, "/s2.html")},
			"/meta-noindex.html":   {Body: htmlPage("mni", `<meta name="robots" content="noindex">`, "/f1.html")},
			"/meta-bot.html":       {Body: htmlPage("mbot", `<meta name="horseshoe" content="nofollow">`, "/s3.html")},
			"/meta-otherbot.html":  {Body: htmlPage("mother", `<meta name="googlebot" content="nofollow">`, "/f2.html")},
			"/xrt-nofollow.html":   {Body: htmlPage("xnf", "", "/s4.html"), Header: http.Header{"X-Robots-Tag": {"nofollow"}}},
			"/xrt-otheragent.html": {Body: htmlPage("xother", "", "/f3.html"), Header: http.Header{"X-Robots-Tag": {"googlebot: nofollow"}}},
			// Two X-Robots-Tag headers: the one for us is the second.
			"/xrt-two.html": {Body: htmlPage("xtwo", "", "/s5.html"),
				Header: http.Header{"X-Robots-Tag": {"googlebot: noindex", "horseshoe: nofollow"}}},
			"/rel.html": {Body: htmlPage("rel", "", "nofollow|/r1.html", "noopener NoFollow|/r2.html", "/f4.html")},
			"/s1.html":  {Body: htmlPage("s1", "")}, "/s2.html": {Body: htmlPage("s2", "")},
			"/s3.html": {Body: htmlPage("s3", "")}, "/s4.html": {Body: htmlPage("s4", "")},
			"/s5.html": {Body: htmlPage("s5", "")},
			"/f1.html": {Body: htmlPage("f1", "")}, "/f2.html": {Body: htmlPage("f2", "")},
			"/f3.html": {Body: htmlPage("f3", "")}, "/f4.html": {Body: htmlPage("f4", "")},
			"/r1.html": {Body: htmlPage("r1", "")}, "/r2.html": {Body: htmlPage("r2", "")},
		}}
	}
	flags := []struct {
		path              string
		noindex, nofollow bool
	}{
		{"/meta-nofollow.html", false, true},
		{"/meta-none.html", true, true},
		{"/meta-noindex.html", true, false},
		{"/meta-bot.html", false, true},
		{"/meta-otherbot.html", false, false},
		{"/xrt-nofollow.html", false, true},
		{"/xrt-otheragent.html", false, false},
		{"/xrt-two.html", false, true},
	}
	tests := []struct {
		name           string
		ip             string
		followNofollow bool
		never          []string
		fetched        []string
	}{
		{"default", "127.0.0.55", false,
			[]string{"/s1.html", "/s2.html", "/s3.html", "/s4.html", "/s5.html", "/r1.html", "/r2.html"},
			[]string{"/f1.html", "/f2.html", "/f3.html", "/f4.html"}},
		{"follow_nofollow", "127.0.0.56", true,
			[]string{"/s1.html", "/s2.html", "/s3.html", "/s4.html", "/s5.html"},
			[]string{"/f1.html", "/f2.html", "/f3.html", "/f4.html", "/r1.html", "/r2.html"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log hitLog
			var srv server
			var res crawlResult
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				srv = startMemServer(n, tt.ip, mk().handler(), &log)
				res = runCrawl(t, crawlConfig{Net: n, Delay: 10 * time.Millisecond, FollowNofollow: tt.followNofollow}, srv.Base(tt.ip)+"/")
			})
			base := srv.Base(tt.ip)
			got := paths(log.all())
			for _, p := range tt.never {
				if slices.Contains(got, p) {
					t.Errorf("%s requested: its only link is nofollow", p)
				}
			}
			for _, p := range tt.fetched {
				if !slices.Contains(got, p) {
					t.Errorf("%s not requested", p)
				}
			}
			for _, f := range flags {
				p := res.page(t, base+f.path)
				if p.NoIndex != f.noindex || p.NoFollow != f.nofollow {
					t.Errorf("%s: noindex=%v nofollow=%v, want %v %v", f.path, p.NoIndex, p.NoFollow, f.noindex, f.nofollow)
				}
			}
		})
	}
}

// timeline renders hits as one line each: arrival and completion since the
// first arrival, host, path and status.
func timeline(hits []hit) string {
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "\n\t%8v %8v %s%s %d", h.Arrive.Sub(hits[0].Arrive), h.Done.Sub(hits[0].Arrive), h.Host, h.Path, h.Status)
	}
	return b.String()
}

// assertPaced fails the test when a request of hits arrives less than want
// after the previous one completed (so also when two are in flight at
// once): the politeness rule, which holds on any clock. It returns the
// sequence's measures.
func assertPaced(tb testing.TB, what string, hits []hit, want time.Duration) gapStats {
	tb.Helper()
	s := measure(hits)
	var early []string
	for i := 1; i < len(hits); i++ {
		if idle := hits[i].Arrive.Sub(hits[i-1].Done); idle < want {
			early = append(early, fmt.Sprintf("%s%s arrived %v after %s%s completed",
				hits[i].Host, hits[i].Path, idle, hits[i-1].Host, hits[i-1].Path))
		}
	}
	if len(early) > 0 {
		tb.Errorf("%s: %d requests sooner than %v after the previous one: %s; timeline:%s",
			what, len(early), want, early[0], timeline(hits))
	}
	return s
}

// assertPacedExact is assertPaced on the bubble's clock, where a sequence
// that always has a request waiting is paced exactly: its smallest gap from
// a completion to the next arrival is want itself, no more (a crawler that
// waits longer than the rule asks, or applies the wrong rule, fails).
func assertPacedExact(tb testing.TB, what string, hits []hit, want time.Duration) gapStats {
	tb.Helper()
	s := assertPaced(tb, what, hits, want)
	if s.MinIdle != want {
		tb.Errorf("%s: smallest gap from a completion to the next arrival %v, want exactly %v:%s", what, s.MinIdle, want, timeline(hits))
	}
	return s
}
