package storage

import "time"

// A recrawl (crawl --recrawl) revisits the pages of the data dir in place:
// a page keeps its id, its record describes the version whose raw exchange,
// text and signature are stored, and Revisit says what the latest recrawl
// found at its URL. When the page changed, the new version replaces the
// stored one (record fields, raw exchange, text, signature) and Revisit keeps
// the previous version's identity (payload digest, date). When it did not, the
// stored version stays and Revisit holds the revisit's own request and
// response header, for the WARC's revisit record. A page found by a recrawl
// that the earlier crawls did not have is an ordinary record fetched after
// the recrawl started (MetaRecrawlStarted).

// Recrawl metadata keys.
const (
	MetaRecrawlRound   = "recrawl_round"   // the latest recrawl's number (1 = the first), decimal
	MetaRecrawlStarted = "recrawl_started" // when it started, RFC 3339
)

// WARC revisit profiles (WARC 1.1, section 6.7.2 and 6.7.3).
const (
	ProfileNotModified   = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
	ProfileIdenticalBody = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
)

// Revisit is what one recrawl found at a page's URL.
type Revisit struct {
	Round      int       `json:"round"`            // the recrawl that made this visit
	Change     string    `json:"change"`           // dedup.Change name, ChangeFailed or ChangeMoved
	Status     int       `json:"status,omitempty"` // HTTP status of the revisit (304 for not modified)
	FetchedAt  time.Time `json:"fetched_at"`
	Similarity float64   `json:"similarity,omitempty"` // to the previous version (exact Jaccard when settled)
	Settled    bool      `json:"settled,omitempty"`
	Error      string    `json:"error,omitempty"` // why the revisit could not tell (ChangeFailed), or a note
	// Location is where a page that now redirects (change "moved") goes:
	// the redirect's target, canonical. The stored version stays, as the
	// last one the URL served; the target is a page of its own.
	Location string `json:"location,omitempty"`
	// Conditional: the request carried If-None-Match or If-Modified-Since.
	Conditional bool `json:"conditional,omitempty"`
	// Profile is the WARC revisit profile of an unchanged page whose
	// payload was not sent again (304) or was sent byte-identical;
	// Request and Response are then that visit's request and response
	// header, without payload.
	Profile  string `json:"profile,omitempty"`
	Request  []byte `json:"request,omitempty"`
	Response []byte `json:"response,omitempty"`
	// A visit that found the page gone or moved keeps its request and
	// whole response (the 404, 410 or redirect) in Request and Response,
	// for the WARC; Truncated: Response holds the header alone, the payload
	// being too large to keep in the record.
	Truncated bool `json:"truncated,omitempty"`
	// The previous version, when this visit stored a new one.
	PrevSHA1      string    `json:"prev_sha1,omitempty"`
	PrevFetchedAt time.Time `json:"prev_fetched_at,omitzero"`
	// History over all recrawls of the URL: visits that could tell, and
	// how many of them found a real change (ordering the next recrawl).
	Visits  int `json:"visits"`
	Changes int `json:"changes"`
}

// Revisit.Change values made without comparing versions (the others are
// dedup.Change names; ChangeGone is dedup.ChangeGone's).
const (
	// ChangeFailed: the visit could not tell (a network error, a 5xx, a 304
	// to a request without validators); the stored version stays.
	ChangeFailed = "failed"
	// ChangeGone: 404 or 410 now; the stored version stays, as the last
	// one the URL served.
	ChangeGone = "gone"
	// ChangeMoved: a redirect now, to Location; the stored version stays,
	// as the last one the URL served, and the target is a page of its own.
	ChangeMoved = "moved"
)

// Gone reports whether the latest recrawl found the page no longer served
// at its URL: 404 or 410 (change "gone"), or a redirect (change "moved",
// to Location). The stored version is then the last one the URL served.
func (rv *Revisit) Gone() bool {
	return rv != nil && (rv.Change == ChangeGone || rv.Change == ChangeMoved)
}
