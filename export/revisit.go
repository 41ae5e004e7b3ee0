package export

import (
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// unchangedRevisit writes, after a unique page's capture, the request and
// revisit records of the latest recrawl's visit when that visit found the
// stored version unchanged without a new payload: a 304 Not Modified
// (profile server-not-modified, block the 304's header) or a 200 with the
// same payload digest (identical-payload-digest, block the response header).
// The revisit refers to the capture just written (WARC 1.1, 6.7).
func (ww *warcWriter) unchangedRevisit(p *storage.Page, or *original) error {
	rv := p.Revisit
	if rv == nil || rv.Profile == "" || len(rv.Response) == 0 || p.SHA1 == "" {
		return nil
	}
	if or == nil {
		or = &original{uri: targetURI(p), date: warcDate(p.FetchedAt)}
	}
	reqID, err := ww.newID()
	if err != nil {
		return err
	}
	revID, err := ww.newID()
	if err != nil {
		return err
	}
	visit := *p
	visit.FetchedAt = rv.FetchedAt
	if len(rv.Request) > 0 {
		if err := ww.request(&visit, rv.Request, reqID, revID); err != nil {
			return err
		}
	}
	fields := []WARCField{
		{"WARC-Type", "revisit"},
		{"WARC-Record-ID", revID},
		{"WARC-Date", warcDate(rv.FetchedAt)},
		{"WARC-Target-URI", targetURI(p)},
	}
	if len(rv.Request) > 0 {
		fields = append(fields, WARCField{"WARC-Concurrent-To", reqID})
	}
	fields = append(fields,
		WARCField{"WARC-Profile", rv.Profile},
		WARCField{"WARC-Refers-To-Target-URI", or.uri},
		WARCField{"WARC-Refers-To-Date", or.date},
	)
	if or.recordID != "" {
		fields = append(fields, WARCField{"WARC-Refers-To", or.recordID})
	}
	fields = append(fields, WARCField{"WARC-Payload-Digest", "sha1:" + p.SHA1})
	return ww.record(fields, ctResponse, rv.Response)
}
