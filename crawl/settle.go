package crawl

import (
	"errors"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// settler returns the exact settlement of a page's near-duplicate
// candidates (dedup.Settler): the Jaccard similarity of the page's looped
// shingles and those of the candidate's stored visible text, tokenized as
// parse.Parse tokenized it (parse.Tokenize, cut at Parse.MaxTokens). It runs
// in the serial commit, only for candidates whose sketch estimate is in the
// settled band (at most dedup.MaxSettle per page): one text read and two
// shinglings. A resumed crawl settles the same way: the texts are in the
// store. With title_tokens the candidate's title (in its page record) comes
// first. With url_tokens the tokens hold URLs that the stored text lacks, so
// there is no settlement (nil: the sketch rule).
func (e *Engine) settler(tokens []string) dedup.Settler {
	if e.o.Parse.URLTokens {
		return nil
	}
	var mine, theirs []uint64
	var words []string
	return func(original uint64) (float64, bool) {
		var err error
		words, err = e.pageTokensTo(words[:0], original)
		if errors.Is(err, ErrElsewhere) {
			return 0, false // the sketch rule decides (docs/DEDUP.md)
		}
		if err != nil {
			e.logger.Warn("near-duplicate candidate not settled: text unreadable", "page", original, "err", err)
			return 0, false
		}
		if mine == nil {
			mine = e.det.Shingles(tokens, nil)
		}
		theirs = e.det.Shingles(words, theirs[:0])
		return dedup.ExactJaccard(mine, theirs), true
	}
}

// pageTokensTo appends the token stream of stored page id as the dedup signed
// it (without URL tokens): its title's words with title_tokens (from its page
// record), then its visible text's, cut at Parse.MaxTokens.
func (e *Engine) pageTokensTo(dst []string, id uint64) ([]string, error) {
	text, err := e.st.Text(e.sctx, id)
	if err != nil {
		return dst, err
	}
	title := ""
	if e.o.Parse.TitleTokens {
		rec, err := e.st.Page(e.sctx, id)
		if err != nil {
			return dst, err
		}
		title = rec.Title
	}
	return e.storedTokens(dst, title, text), nil
}

// storedTokens tokenizes a page's title and text as parse.Parse does (the
// title only with title_tokens; no URL tokens), cut at Parse.MaxTokens.
func (e *Engine) storedTokens(dst []string, title, text string) []string {
	if e.o.Parse.TitleTokens {
		dst = parse.Tokenize(dst, title)
	}
	dst = parse.Tokenize(dst, text)
	if m := e.o.Parse.MaxTokens; m > 0 && len(dst) > m {
		dst = dst[:m]
	}
	return dst
}
