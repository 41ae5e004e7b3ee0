package export

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// WARC layout (see docs/WARC.md): one warcinfo record, then for every page in
// id order
//
//	unique page with raw data:   request + response (WARC-Concurrent-To each other)
//	exact duplicate, same bytes: request + revisit (identical-payload-digest)
//	other duplicates:            metadata (application/json naming the original)
//
// Duplicates are written only with WARCOptions.IncludeDuplicates.

const (
	warcVersion = "WARC/1.1"
	// RevisitProfile is the WARC-Profile of revisit records whose payload
	// is byte-identical to the original's.
	RevisitProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	warcConformsTo = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"

	ctRequest  = "application/http;msgtype=request"
	ctResponse = "application/http;msgtype=response"
	ctFields   = "application/warc-fields"
	ctJSON     = "application/json"
)

// WARCStore is the read side of a crawl store that WARC export needs.
// *storage.DB satisfies it.
type WARCStore interface {
	ForEachPage(fn func(*storage.Page) error) error
	Raw(id uint64) (request, response []byte, err error)
	GetMeta(name string) ([]byte, error)   // "seeds", "started", "finished" for warcinfo
	Page(id uint64) (*storage.Page, error) // a duplicate's original
}

// WARCOptions selects what WARC export writes.
type WARCOptions struct {
	// IncludeDuplicates also writes exact duplicates as revisit records and
	// near duplicates as metadata records.
	IncludeDuplicates bool
	// Software names the writer in warcinfo, e.g. "Horseshoe/0.1.0".
	Software string
	// Settings are the crawl settings recorded in warcinfo (sorted by key).
	Settings map[string]string
	// Now dates the warcinfo record; nil means time.Now.
	Now func() time.Time
	// Rand is the randomness behind record ids; nil means crypto/rand.
	Rand io.Reader
	// Uncompressed writes a plain .warc instead of one gzip member per record.
	Uncompressed bool
	// Damaged, when set, is called for every page whose records are left
	// out or reduced to a metadata record because its raw exchange cannot
	// be read back from a damaged store (storage.ErrDamaged).
	Damaged func(p *storage.Page)
	// CDXJ, when set, receives the CDXJ index of the file (see cdxj.go):
	// one line per response, revisit and metadata record, sorted, written
	// once the WARC is complete. It is held in memory until then, some
	// 300 bytes a record.
	CDXJ io.Writer
	// Filename names the WARC file in the CDXJ index (its base name, as
	// replay tools find it in their collection).
	Filename string
}

// WARCField is one named field of a WARC record header.
type WARCField struct {
	Name, Value string
}

// ErrWARCFormat marks a malformed WARC stream.
var ErrWARCFormat = errors.New("malformed WARC")

// WARCDigest returns the WARC digest of b: "sha1:" and the base32 SHA-1, the
// convention of Heritrix and wget.
func WARCDigest(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// original is what a duplicate's records need to know about its original.
type original struct {
	entry    *originalID // the entry kept between passes (nil: none)
	uri      string
	date     string // WARC-Date of the original's response record
	recordID string // "" when the original's response is not in this file
	payload  string // WARC-Payload-Digest of the original ("" if unknown)
}

// WARC writes the crawl as WARC 1.1 (ISO 28500) to w: a warcinfo record, then
// request and response records for every unique page whose raw exchange was
// kept, and (with IncludeDuplicates) revisit records for exact duplicates
// whose payload is byte-identical to the original's and metadata records for
// the other duplicates. Unless Uncompressed, every record is one gzip member,
// so a reader can seek to any record's offset. It returns the number of
// records written.
//
// A page whose raw exchange cannot be read back from a damaged store
// (storage.ErrDamaged) is left out, and so is a duplicate's revisit record
// whose own exchange cannot be read (it is then written as a metadata
// record); the caller learns how many from the store (storage.DB.Damage).
func WARC(w io.Writer, st WARCStore, o WARCOptions) (records int, err error) {
	ww := newWARCWriter(w, o)
	// Pass 1: assign the response record ids of originals, so duplicates can
	// refer to them whatever the page order. It keeps a fixed-size entry per
	// unique page (issue 30); a duplicate reads its original's record back.
	var originals originalIDs
	err = st.ForEachPage(func(p *storage.Page) error {
		if p.Class != storage.ClassUnique {
			return nil
		}
		e := originalID{id: p.ID}
		if p.HasRaw {
			if err := ww.newUUID(&e.rid); err != nil {
				return err
			}
			e.has = true
		}
		originals = append(originals, e)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("warc: read pages: %w", err)
	}
	if !slices.IsSortedFunc(originals, func(a, b originalID) int { return cmp.Compare(a.id, b.id) }) {
		return 0, errors.New("warc: page records out of id order")
	}
	if err := ww.warcinfo(st); err != nil {
		return ww.n, err
	}
	err = st.ForEachPage(func(p *storage.Page) error {
		switch p.Class {
		case storage.ClassUnique:
			if !p.HasRaw {
				return nil
			}
			or := originals.of(p)
			if err := ww.capture(st, p, or); err != nil {
				return err
			}
			if err := ww.unchangedRevisit(p, or); err != nil {
				return err
			}
			return ww.goneVisit(p)
		case storage.ClassExact, storage.ClassNear:
			if !o.IncludeDuplicates {
				return nil
			}
			or, err := originals.read(st, p.OriginalID)
			if err != nil {
				return err
			}
			return ww.duplicate(st, p, or)
		}
		return nil
	})
	if err != nil {
		return ww.n, err
	}
	if err := ww.flush(); err != nil {
		return ww.n, err
	}
	if ww.index != nil {
		return ww.n, ww.index.write(o.CDXJ)
	}
	return ww.n, nil
}

// originalID is what WARC export keeps of a unique page between its
// passes: its id and the record id of its response (has: one is written).
type originalID struct {
	id  uint64
	rid [16]byte
	has bool
}

// originalIDs are the unique pages, in id order.
type originalIDs []originalID

func (os originalIDs) find(id uint64) *originalID {
	i, ok := slices.BinarySearchFunc(os, id, func(e originalID, id uint64) int { return cmp.Compare(e.id, id) })
	if !ok {
		return nil
	}
	return &os[i]
}

// of returns the original of unique page p, nil if it was not unique in
// pass 1.
func (os originalIDs) of(p *storage.Page) *original {
	e := os.find(p.ID)
	if e == nil {
		return nil
	}
	return e.original(p)
}

// read returns the original whose id is id, read back from st, nil if it
// was not a unique page in pass 1.
func (os originalIDs) read(st WARCStore, id uint64) (*original, error) {
	e := os.find(id)
	if e == nil {
		return nil, nil
	}
	p, err := st.Page(id)
	if err != nil {
		return nil, fmt.Errorf("warc: original %d: %w", id, err)
	}
	return e.original(p), nil
}

func (e *originalID) original(p *storage.Page) *original {
	or := &original{entry: e, uri: targetURI(p), date: warcDate(p.FetchedAt)}
	if p.SHA1 != "" {
		or.payload = "sha1:" + p.SHA1
	}
	if e.has {
		or.recordID = formatUUID(e.rid[:])
	}
	return or
}

type warcWriter struct {
	out      *countingWriter // under bw: the bytes flushed so far
	index    *cdxjIndex      // nil: no CDXJ index
	bw       *bufio.Writer
	zw       *gzip.Writer // nil when uncompressed
	o        WARCOptions
	rand     io.Reader
	info     string // WARC-Record-ID of the warcinfo record
	n        int
	hdr      bytes.Buffer
	uuidBuf  [16]byte
	tailCRLF []byte
}

func newWARCWriter(w io.Writer, o WARCOptions) *warcWriter {
	cw := &countingWriter{w: w}
	ww := &warcWriter{out: cw, bw: bufio.NewWriterSize(cw, 1<<16), o: o, rand: o.Rand, tailCRLF: []byte("\r\n\r\n")}
	if o.CDXJ != nil {
		ww.index = newCDXJIndex(o.Filename)
	}
	if ww.rand == nil {
		ww.rand = rand.Reader
	}
	if !o.Uncompressed {
		ww.zw = gzip.NewWriter(ww.bw)
	}
	return ww
}

// newID returns a fresh "<urn:uuid:...>" (random, version 4).
func (ww *warcWriter) newID() (string, error) {
	if err := ww.newUUID(&ww.uuidBuf); err != nil {
		return "", err
	}
	return formatUUID(ww.uuidBuf[:]), nil
}

// newUUID fills u with a fresh random UUID (version 4).
func (ww *warcWriter) newUUID(u *[16]byte) error {
	if _, err := io.ReadFull(ww.rand, u[:]); err != nil {
		return fmt.Errorf("warc: record id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return nil
}

// formatUUID writes u as a record id, "<urn:uuid:...>".
func formatUUID(u []byte) string {
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// record writes one record: the header fields given (WARC-Type first), then
// WARC-Warcinfo-ID (except for warcinfo), WARC-Block-Digest, Content-Type and
// Content-Length, then the block and the closing CRLF CRLF.
func (ww *warcWriter) record(fields []WARCField, contentType string, block ...[]byte) error {
	h := sha1.New()
	size := 0
	for _, b := range block {
		h.Write(b)
		size += len(b)
	}
	ww.hdr.Reset()
	ww.hdr.WriteString(warcVersion + "\r\n")
	for _, f := range fields {
		writeField(&ww.hdr, f.Name, f.Value)
	}
	if ww.info != "" {
		writeField(&ww.hdr, "WARC-Warcinfo-ID", ww.info)
	}
	writeField(&ww.hdr, "WARC-Block-Digest", "sha1:"+base32.StdEncoding.EncodeToString(h.Sum(nil)))
	writeField(&ww.hdr, "Content-Type", contentType)
	writeField(&ww.hdr, "Content-Length", strconv.Itoa(size))
	ww.hdr.WriteString("\r\n")

	start := ww.offset()
	var out io.Writer = ww.bw
	if ww.zw != nil {
		ww.zw.Reset(ww.bw)
		out = ww.zw
	}
	if _, err := out.Write(ww.hdr.Bytes()); err != nil {
		return fmt.Errorf("warc: write: %w", err)
	}
	for _, b := range block {
		if _, err := out.Write(b); err != nil {
			return fmt.Errorf("warc: write: %w", err)
		}
	}
	if _, err := out.Write(ww.tailCRLF); err != nil {
		return fmt.Errorf("warc: write: %w", err)
	}
	if ww.zw != nil {
		if err := ww.zw.Close(); err != nil {
			return fmt.Errorf("warc: write: %w", err)
		}
	}
	ww.n++
	if ww.index != nil && len(block) > 0 {
		length := ww.offset() - start
		if ww.zw == nil {
			length -= int64(len(ww.tailCRLF)) // a plain record's length ends with its block, as warcio counts it
		}
		return ww.index.add(fields, contentType, block[0], start, length)
	}
	return nil
}

// offset is where the next record starts in the output.
func (ww *warcWriter) offset() int64 { return ww.out.n + int64(ww.bw.Buffered()) }

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (ww *warcWriter) damaged(p *storage.Page) {
	if ww.o.Damaged != nil {
		ww.o.Damaged(p)
	}
}

func (ww *warcWriter) flush() error {
	if err := ww.bw.Flush(); err != nil {
		return fmt.Errorf("warc: write: %w", err)
	}
	return nil
}

// writeField writes "Name: value\r\n", with value made safe for a header
// line: control characters (CR and LF in particular) become spaces.
func writeField(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	b.WriteString(": ")
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			c = ' '
		}
		b.WriteByte(c)
	}
	b.WriteString("\r\n")
}

func (ww *warcWriter) warcinfo(st WARCStore) error {
	now := time.Now
	if ww.o.Now != nil {
		now = ww.o.Now
	}
	id, err := ww.newID()
	if err != nil {
		return err
	}
	software := ww.o.Software
	if software == "" {
		software = "Horseshoe"
	}
	var b bytes.Buffer
	writeField(&b, "software", software)
	writeField(&b, "format", "WARC File Format 1.1")
	writeField(&b, "conformsTo", warcConformsTo)
	for _, name := range []string{storage.MetaStarted, storage.MetaFinished} {
		v, err := meta(st, name)
		if err != nil {
			return err
		}
		if v != "" {
			writeField(&b, name, v)
		}
	}
	seeds, err := meta(st, storage.MetaSeeds)
	if err != nil {
		return err
	}
	for s := range strings.SplitSeq(seeds, "\n") {
		if s = strings.TrimSpace(s); s != "" {
			writeField(&b, "seed", s)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ww.o.Settings)) {
		writeField(&b, fieldName(k), ww.o.Settings[k])
	}
	fields := []WARCField{
		{"WARC-Type", "warcinfo"},
		{"WARC-Record-ID", id},
		{"WARC-Date", warcDate(now())},
	}
	if err := ww.record(fields, ctFields, b.Bytes()); err != nil {
		return err
	}
	ww.info = id
	return nil
}

// fieldName keeps a settings key usable as a warc-fields name (a token).
func fieldName(k string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return '-'
		}
		return r
	}, k)
}

func meta(st WARCStore, name string) (string, error) {
	v, err := st.GetMeta(name)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("warc: crawl metadata %q: %w", name, err)
	}
	return string(v), nil
}

// capture writes the request and response records of a unique page.
func (ww *warcWriter) capture(st WARCStore, p *storage.Page, or *original) error {
	req, resp, err := st.Raw(p.ID)
	if errors.Is(err, storage.ErrDamaged) {
		ww.damaged(p) // no record beats a record whose bytes are wrong
		if or != nil {
			or.recordID = "" // duplicates must not refer to it
			if or.entry != nil {
				or.entry.has = false
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("warc: raw exchange of %s: %w", p.URL, err)
	}
	if or == nil || or.recordID == "" { // the page changed class or got raw data after pass 1
		or = &original{uri: targetURI(p), date: warcDate(p.FetchedAt)}
		if or.recordID, err = ww.newID(); err != nil {
			return err
		}
	}
	respID := or.recordID
	reqID, err := ww.newID()
	if err != nil {
		return err
	}
	uri, date := or.uri, or.date
	if err := ww.request(p, req, reqID, respID); err != nil {
		return err
	}
	fields := []WARCField{
		{"WARC-Type", "response"},
		{"WARC-Record-ID", respID},
		{"WARC-Date", date},
		{"WARC-Target-URI", uri},
	}
	if p.RemoteIP != "" {
		fields = append(fields, WARCField{"WARC-IP-Address", p.RemoteIP})
	}
	fields = append(fields, WARCField{"WARC-Concurrent-To", reqID})
	if _, payload, err := splitHTTP(resp); err == nil {
		fields = append(fields, WARCField{"WARC-Payload-Digest", WARCDigest(payload)})
	}
	return ww.record(fields, ctResponse, resp)
}

func (ww *warcWriter) request(p *storage.Page, req []byte, reqID, concurrent string) error {
	fields := []WARCField{
		{"WARC-Type", "request"},
		{"WARC-Record-ID", reqID},
		{"WARC-Date", warcDate(p.FetchedAt)},
		{"WARC-Target-URI", targetURI(p)},
	}
	if p.RemoteIP != "" {
		fields = append(fields, WARCField{"WARC-IP-Address", p.RemoteIP})
	}
	fields = append(fields, WARCField{"WARC-Concurrent-To", concurrent})
	if _, payload, err := splitHTTP(req); err == nil && len(payload) > 0 {
		fields = append(fields, WARCField{"WARC-Payload-Digest", WARCDigest(payload)})
	}
	return ww.record(fields, ctRequest, req)
}

// duplicate writes an exact duplicate whose payload is byte-identical to its
// original's as request + revisit records, and any other duplicate (a near
// duplicate, or an exact one by normalized text whose bytes differ) as a
// metadata record naming the original.
func (ww *warcWriter) duplicate(st WARCStore, p *storage.Page, or *original) error {
	if p.Class == storage.ClassExact && p.HasRaw && or != nil && or.payload != "" {
		req, resp, err := st.Raw(p.ID)
		if errors.Is(err, storage.ErrDamaged) {
			ww.damaged(p)
			return ww.metadata(p, or)
		}
		if err != nil {
			return fmt.Errorf("warc: raw exchange of %s: %w", p.URL, err)
		}
		if head, payload, err := splitHTTP(resp); err == nil && WARCDigest(payload) == or.payload {
			return ww.revisit(p, or, req, head, or.payload)
		}
	}
	return ww.metadata(p, or)
}

func (ww *warcWriter) revisit(p *storage.Page, or *original, req, head []byte, payloadDigest string) error {
	reqID, err := ww.newID()
	if err != nil {
		return err
	}
	revID, err := ww.newID()
	if err != nil {
		return err
	}
	if err := ww.request(p, req, reqID, revID); err != nil {
		return err
	}
	fields := []WARCField{
		{"WARC-Type", "revisit"},
		{"WARC-Record-ID", revID},
		{"WARC-Date", warcDate(p.FetchedAt)},
		{"WARC-Target-URI", targetURI(p)},
	}
	if p.RemoteIP != "" {
		fields = append(fields, WARCField{"WARC-IP-Address", p.RemoteIP})
	}
	fields = append(fields,
		WARCField{"WARC-Concurrent-To", reqID},
		WARCField{"WARC-Profile", RevisitProfile},
		WARCField{"WARC-Refers-To-Target-URI", or.uri},
		WARCField{"WARC-Refers-To-Date", or.date},
	)
	if or.recordID != "" {
		fields = append(fields, WARCField{"WARC-Refers-To", or.recordID})
	}
	fields = append(fields, WARCField{"WARC-Payload-Digest", payloadDigest})
	return ww.record(fields, ctResponse, head)
}

// DuplicateInfo is the JSON block of the metadata record written for a
// duplicate that is not stored as a revisit.
type DuplicateInfo struct {
	URL          string    `json:"url"`
	Class        string    `json:"class"`
	DuplicateOf  string    `json:"duplicate_of"`
	OriginalDate string    `json:"original_date,omitempty"`
	Method       string    `json:"method,omitempty"`
	Similarity   float64   `json:"similarity"`
	FetchedAt    time.Time `json:"fetched_at"`
	PayloadSHA1  string    `json:"payload_digest,omitempty"`
}

func (ww *warcWriter) metadata(p *storage.Page, or *original) error {
	id, err := ww.newID()
	if err != nil {
		return err
	}
	info := DuplicateInfo{
		URL: targetURI(p), Class: string(p.Class), DuplicateOf: safeURI(p.DuplicateOf), Method: p.Method,
		Similarity: p.Similarity, FetchedAt: p.FetchedAt.UTC(),
	}
	if p.SHA1 != "" {
		info.PayloadSHA1 = "sha1:" + p.SHA1
	}
	if or != nil {
		if info.DuplicateOf == "" {
			info.DuplicateOf = or.uri
		}
		info.OriginalDate = or.date
	}
	block, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("warc: metadata of %s: %w", p.URL, err)
	}
	fields := []WARCField{
		{"WARC-Type", "metadata"},
		{"WARC-Record-ID", id},
		{"WARC-Date", warcDate(p.FetchedAt)},
		{"WARC-Target-URI", targetURI(p)},
	}
	if or != nil && or.recordID != "" {
		fields = append(fields, WARCField{"WARC-Refers-To", or.recordID})
	}
	return ww.record(fields, ctJSON, block)
}

// targetURI is the URI the stored exchange was made with: the final URL when
// the fetch was redirected inside the fetcher.
func targetURI(p *storage.Page) string {
	return safeURI(p.ServedURL())
}

// safeURI percent-encodes the bytes a URI may not hold (controls, space,
// non-ASCII), so that a URI field is one header line of valid ASCII. The
// crawler's canonical URLs pass unchanged.
func safeURI(u string) string {
	const hex = "0123456789ABCDEF"
	i := 0
	for i < len(u) && u[i] > ' ' && u[i] < 0x7f {
		i++
	}
	if i == len(u) {
		return u
	}
	b := make([]byte, 0, len(u)+16)
	b = append(b, u[:i]...)
	for ; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// warcDate formats t as a WARC 1.1 date: UTC, with the fraction of a second
// down to microseconds when there is one.
func warcDate(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.999999Z")
}

// splitHTTP splits an HTTP message at the blank line that ends its header.
func splitHTTP(msg []byte) (header, payload []byte, err error) {
	i := bytes.Index(msg, []byte("\r\n\r\n"))
	if i < 0 {
		return nil, nil, fmt.Errorf("%w: HTTP message without the blank line after its header", ErrWARCFormat)
	}
	return msg[:i+4], msg[i+4:], nil
}
