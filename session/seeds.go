package session

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Seeds returns the canonical seeds of a crawl: the URLs given and those of
// the seeds file (none for ""). A seeds file that cannot be read, or a seed
// that is not a crawlable URL, is a *UsageError.
func Seeds(urls []string, file string, maxLen int) ([]string, error) {
	raw := urls
	if file != "" {
		fromFile, err := ReadSeeds(file)
		if err != nil {
			return nil, &UsageError{err.Error()}
		}
		raw = append(raw, fromFile...)
	}
	return CanonicalSeeds(raw, maxLen)
}

// ReadSeeds reads a seeds file: one URL per line, blank lines and lines
// starting with # ignored.
func ReadSeeds(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read seeds: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read seeds: %w", err)
	}
	return out, nil
}

// CanonicalSeeds canonicalizes the seed URLs, without repeats. A seed that
// is not an absolute http(s) URL, or longer than maxLen bytes (urls.max_length,
// which links obey too), is a *UsageError naming it (shortened).
func CanonicalSeeds(raw []string, maxLen int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, usagef("bad seed URL %q: want an absolute http:// or https:// URL", shorten(r))
		}
		c, err := frontier.Canonicalize(r, nil)
		if err != nil {
			return nil, usagef("bad seed URL %q: %v", shorten(r), err)
		}
		if len(c) > maxLen {
			return nil, usagef("bad seed URL %q: %d bytes, longer than urls.max_length (%d)", shorten(r), len(c), maxLen)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// shorten cuts s to its first 100 bytes for an error message.
func shorten(s string) string {
	if len(s) <= 100 {
		return s
	}
	return strings.ToValidUTF8(s[:100], "") + "..."
}
