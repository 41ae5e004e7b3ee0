package parse

import "strings"

// isValuedDirective reports whether name is a robots directive that carries a value after
// a colon ("max-snippet: 20"); a colon after one of these does not start an agent prefix.
func isValuedDirective(name string) bool {
	switch name {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}

// RobotsDirectives parses the content of a meta robots tag or an X-Robots-Tag header value
// and reports whether it forbids indexing and following for the crawler named bot.
//
// Directives are separated by commas (white space and semicolons are tolerated too) and
// matched case-insensitively: "noindex", "nofollow", and "none" (both); "all", "index"
// and "follow" restrict nothing. An agent prefix such as "googlebot: noindex" makes the
// directives after it, up to the next agent prefix, apply only to that agent; it applies
// here only if it equals bot (case-insensitive). Directives before any prefix apply to all.
func RobotsDirectives(value, bot string) (noindex, nofollow bool) {
	applies := true
	for part := range strings.SplitSeq(value, ",") {
		part = strings.TrimSpace(part)
		if name, rest, ok := strings.Cut(part, ":"); ok {
			name = strings.ToLower(strings.TrimSpace(name))
			if !isValuedDirective(name) && name != "" && !strings.ContainsAny(name, " \t;") {
				applies = bot != "" && strings.EqualFold(name, strings.TrimSpace(bot))
				part = rest
			}
		}
		if !applies {
			continue
		}
		for _, d := range strings.FieldsFunc(part, isDirectiveSep) {
			switch strings.ToLower(d) {
			case "noindex":
				noindex = true
			case "nofollow":
				nofollow = true
			case "none":
				noindex, nofollow = true, true
			}
		}
	}
	return noindex, nofollow
}

func isDirectiveSep(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', ';':
		return true
	}
	return false
}
