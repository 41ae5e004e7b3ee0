package export

import "github.com/horseshoe-crawler/horseshoe/internal/warcread"

// The WARC reader of the tests lives in internal/warcread: it is not part of export's API.
type warcRecord = warcread.Record

var readWARC = warcread.Read
