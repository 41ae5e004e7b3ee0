package report

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

// altavistaCurve is P(match | J) for 6 supershingles of 14 shingles each,
// two of which must match: sum over i >= 2 of C(6,i) p^i (1-p)^(6-i), p = J^14.
func altavistaCurve(tb testing.TB, n int) []CurvePoint {
	tb.Helper()
	binom := [...]float64{1, 6, 15, 20, 15, 6, 1}
	out := make([]CurvePoint, 0, n+1)
	for k := 0; k <= n; k++ {
		j := float64(k) / float64(n)
		p := math.Pow(j, 14)
		prob := 0.0
		for i := 2; i <= 6; i++ {
			prob += binom[i] * math.Pow(p, float64(i)) * math.Pow(1-p, float64(6-i))
		}
		out = append(out, CurvePoint{Jaccard: j, Probability: prob})
	}
	return out
}

// sampleData builds a small crawl with every class, hosts that sort
// differently as strings and as numbers, hostile strings from the web and
// mirrors of both kinds.
func sampleData(tb testing.TB) *Data {
	tb.Helper()
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	pages := []Page{
		{URL: "http://www.example.com/", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Title: "Home", Class: ClassUnique, FetchedAt: at(1)},
		{URL: "http://www.example.com/a", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Title: "<script>alert(1)</script>", Class: ClassUnique, Depth: 1, FetchedAt: at(2)},
		{URL: "http://www.example.com/a?session=1", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Class: ClassExactDuplicate, DuplicateOf: "http://www.example.com/a", Similarity: 1, Method: MethodExact,
			Depth: 2, FetchedAt: at(3)},
		{URL: "http://www.example.com/a-print", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Class: ClassNearDuplicate, DuplicateOf: "http://www.example.com/a", Similarity: 0.93,
			Method: MethodSupershingle, Depth: 2, FetchedAt: at(4)},
		{URL: "http://www.example.com/b", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Title: "B", Class: ClassUnique, Depth: 1, FetchedAt: at(5)},
		{URL: "http://www.example.com/b2", Host: "www.example.com", Status: 200, ContentType: "text/html",
			Class: ClassNearDuplicate, DuplicateOf: "http://www.example.com/b", Similarity: 0.81,
			Method: MethodSimhash, Depth: 2, FetchedAt: at(6)},
		{URL: "http://www.example.com/private/x", Host: "www.example.com", Class: ClassRobotsDisallowed, Depth: 2},
		{URL: "http://www.example.com/logo.png", Host: "www.example.com", Status: 200, ContentType: "image/png",
			Class: ClassNotHTML, Depth: 1, FetchedAt: at(7)},
		{URL: "http://www.example.com/broken", Host: "www.example.com", Status: 500, ContentType: "text/html",
			Class: ClassError, Error: "server error: <500>", Depth: 1, FetchedAt: at(8)},
		{URL: "http://mirror.example.org/docs/a", Host: "mirror.example.org", Status: 200, ContentType: "text/html",
			Class: ClassNearDuplicate, DuplicateOf: "http://www.example.com/a", Similarity: 0.97,
			Method: MethodSupershingle, Depth: 1, FetchedAt: at(9)},
		{URL: "http://mirror.example.org/docs/b", Host: "mirror.example.org", Class: ClassMirrorSkipped,
			DuplicateOf: "http://www.example.com/b", Similarity: 0.95, Method: MethodMirror, Depth: 1},
		{URL: "http://10.0.0.9:8080/", Host: "10.0.0.9:8080", Status: 200, ContentType: "text/html",
			Class: ClassUnique, FetchedAt: at(10)},
		{URL: "http://10.0.0.10:8080/", Host: "10.0.0.10:8080", Status: 200, ContentType: "text/html",
			Class: ClassExactDuplicate, DuplicateOf: "http://10.0.0.9:8080/", Similarity: 1, Method: MethodExact,
			FetchedAt: at(11)},
		{URL: "http://10.0.0.10:8080/gone", Host: "10.0.0.10:8080", Class: ClassError,
			Error: "dial tcp: connection refused"},
		{URL: "javascript:alert(2)", Host: "evil.test", Status: 200, ContentType: "text/html",
			Title: "\x1b[31mred\x1b[0m \"quoted\" & <b>bold</b>", Class: ClassNearDuplicate,
			DuplicateOf: "http://www.example.com/", Similarity: 0.88, Method: MethodSimhash, FetchedAt: at(12)},
		{URL: "http://evil.test/" + strings.Repeat("very-long-path-segment/", 12) + "end.html", Host: "evil.test",
			Status: 200, ContentType: "text/html", Title: "長いタイトル", Class: ClassNearDuplicate,
			DuplicateOf: "http://www.example.com/b", Similarity: 0.76, Method: MethodSimhash, FetchedAt: at(13)},
	}
	return &Data{
		Stats: Stats{
			Pages: len(pages), Requests: 17, Hosts: 5,
			ByClass: map[string]int{ClassUnique: 4, ClassExactDuplicate: 2, ClassNearDuplicate: 5,
				ClassMirrorSkipped: 1, ClassRobotsDisallowed: 1, ClassNotHTML: 1, ClassError: 2},
			Started: t0, Finished: t0.Add(14*time.Minute + 3*time.Second), Complete: true,
		},
		Pages: pages,
		Mirrors: []Mirror{{Host: "mirror.example.org", Prefix: "/docs/", MirrorOf: "www.example.com",
			OriginalPrefix: "/", PathsCompared: 20, PathsMatched: 19, Score: 0.95, RequestsSaved: 41}},
		ReplicatedPrefixes: []Mirror{{Host: "www.example.com", Prefix: "/v2/", MirrorOf: "www.example.com",
			OriginalPrefix: "/v1/", PathsCompared: 8, PathsMatched: 8, Score: 1, RequestsSaved: 12}},
		IrrelevantParams: []IrrelevantParam{{Host: "shop.example.net", Param: "visit", Pairs: 3, Paths: 2,
			Examples: []ParamPair{{URL: "http://shop.example.net/a?visit=2", Other: "http://shop.example.net/a?visit=1"}}},
			{Host: "shop.example.net", Param: "s", Pairs: 4, Paths: 3, Withdrawn: true,
				Counter: &ParamPair{URL: "http://shop.example.net/p?s=2", Other: "http://shop.example.net/p?s=1"}},
			{Host: "shop.example.net", Param: "/*/", Value: "(S(kx3wq0ab4c5d2e1f0a9b8c7d))", Pairs: 40, Paths: 5,
				Examples: []ParamPair{{URL: "http://shop.example.net/(S(p1q2r3s4t5u0v1w2x3y4z5ab))/a",
					Other: "http://shop.example.net/(S(kx3wq0ab4c5d2e1f0a9b8c7d))/a"}}}},
		Filter: "altavista 6x14 r=2",
		Curve:  altavistaCurve(tb, 20),
	}
}

// bigData builds a synthetic crawl of n pages over 50 hosts, about a third
// of them duplicates, for benchmarks and width tests.
func bigData(tb testing.TB, n int) *Data {
	tb.Helper()
	classes := Classes()
	d := &Data{Filter: "altavista 6x14 r=2", Curve: altavistaCurve(tb, 100),
		Stats: Stats{Started: t0, Finished: t0.Add(time.Hour), Requests: n + 50}}
	for i := range n {
		host := fmt.Sprintf("host%d.example.net", i%50)
		p := Page{
			URL:  fmt.Sprintf("https://%s/section/%d/article-%d.html?ref=%d", host, i%17, i, i%5),
			Host: host, Status: 200, ContentType: "text/html", Title: fmt.Sprintf("Article %d", i),
			Class: classes[i%len(classes)], Depth: i % 6, FetchedAt: t0.Add(time.Duration(i) * time.Second),
		}
		switch p.Class {
		case ClassExactDuplicate:
			p.DuplicateOf, p.Similarity, p.Method = fmt.Sprintf("https://host0.example.net/orig/%d", i%97), 1, MethodExact
		case ClassNearDuplicate:
			p.DuplicateOf = fmt.Sprintf("https://host0.example.net/orig/%d", i%97)
			p.Similarity, p.Method = 0.75+float64(i%250)/1000, MethodSupershingle
		case ClassMirrorSkipped:
			p.Status = 0
			p.DuplicateOf, p.Similarity, p.Method = fmt.Sprintf("https://host1.example.net/orig/%d", i%31), 0.9, MethodMirror
		}
		d.Pages = append(d.Pages, p)
	}
	for i := range 20 {
		d.Mirrors = append(d.Mirrors, Mirror{Host: fmt.Sprintf("host%d.example.net", i), Prefix: "/section/",
			MirrorOf: "host0.example.net", OriginalPrefix: "/", PathsCompared: 30, PathsMatched: 28, Score: 0.93,
			RequestsSaved: 100 + i})
	}
	return d
}
