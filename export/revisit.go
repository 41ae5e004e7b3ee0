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

// goneVisit writes, after a unique page's capture, the request and response
// records of the latest recrawl's visit when that visit found the page gone
// (404, 410) or moved (a redirect): a replay of the URL at the visit's date
// then serves the 404 or the redirect, not the stored capture, which stays
// as what the URL served until then. A response whose payload was too large
// to keep holds its header alone and says so (WARC-Truncated: length).
func (ww *warcWriter) goneVisit(p *storage.Page) error {
	rv := p.Revisit
	if !rv.Gone() || len(rv.Request) == 0 || len(rv.Response) == 0 {
		return nil
	}
	reqID, err := ww.newID()
	if err != nil {
		return err
	}
	respID, err := ww.newID()
	if err != nil {
		return err
	}
	visit := *p
	visit.FetchedAt = rv.FetchedAt
	if err := ww.request(&visit, rv.Request, reqID, respID); err != nil {
		return err
	}
	fields := []WARCField{
		{"WARC-Type", "response"},
		{"WARC-Record-ID", respID},
		{"WARC-Date", warcDate(rv.FetchedAt)},
		{"WARC-Target-URI", targetURI(p)},
		{"WARC-Concurrent-To", reqID},
	}
	if rv.Truncated {
		fields = append(fields, WARCField{"WARC-Truncated", "length"})
	} else if _, payload, err := splitHTTP(rv.Response); err == nil {
		fields = append(fields, WARCField{"WARC-Payload-Digest", WARCDigest(payload)})
	}
	return ww.record(fields, ctResponse, rv.Response)
}
