package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

func main() {
	a, b := os.Args[1], os.Args[2]
	det, _ := dedup.New(dedup.DefaultOptions())
	filepath.Walk(b, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".html") {
			return nil
		}
		rel, _ := filepath.Rel(b, p)
		ba, err1 := os.ReadFile(filepath.Join(a, rel))
		bb, err2 := os.ReadFile(p)
		if err1 != nil || err2 != nil {
			return nil
		}
		u, _ := url.Parse("http://x/")
		da, _ := parse.Parse(ba, u, parse.Options{MaxTokens: 1 << 20})
		db, _ := parse.Parse(bb, u, parse.Options{MaxTokens: 1 << 20})
		sa, sb := det.Shingles(da.Tokens, nil), det.Shingles(db.Tokens, nil)
		j := dedup.ExactJaccard(sa, sb)
		if j < 0.95 {
			// token diff
			ma := map[string]int{}
			for _, t := range da.Tokens { ma[t]++ }
			for _, t := range db.Tokens { ma[t]-- }
			var plus, minus []string
			for t, n := range ma { if n > 0 { plus = append(plus, t) } else if n < 0 { minus = append(minus, t) } }
			if len(plus) > 12 { plus = plus[:12] }
			if len(minus) > 12 { minus = minus[:12] }
			fmt.Printf("%.3f %5d %-50s new:%v old:%v\n", j, len(da.Tokens), rel, plus, minus)
		}
		return nil
	})
}
