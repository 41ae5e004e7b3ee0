package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// A page record ('p/<id>') and a skip record ('k/<url>') are stored in a
// compact binary form (issue 29): the version byte recordV1, then the fields
// of Page in the order encodePage writes them. Integers are varints (signed
// ones zig-zag), floats are the uvarint of their bits byte-reversed (0 is one
// byte), strings and byte slices a uvarint length then the bytes, a time its
// Unix seconds, nanoseconds and zone offset, the booleans one uvarint of
// flags, the class an index into Classes (0: the name follows), Redirects a
// count then the strings, and Revisit a flag then its fields. Stores written
// before hold JSON records, which begin with '{' and are decoded as JSON.
// encodePage and decodePage are the one place either form is written or read.
const recordV1 = 0x01

// errRecord means a stored record that does not decode.
var errRecord = errors.New("page record does not decode")

// Page flags (one uvarint).
const (
	flagNoIndex = 1 << iota
	flagNoFollow
	flagVerify
	flagHasRaw
	flagRevisit
)

// Revisit flags.
const (
	rvSettled = 1 << iota
	rvConditional
	rvTruncated
)

// encodePage returns the stored form of p.
func encodePage(p *Page) []byte {
	w := recordWriter{b: make([]byte, 0, 256)}
	w.b = append(w.b, recordV1)
	w.uint(p.ID)
	w.str(p.URL)
	w.str(p.FinalURL)
	w.str(p.Host)
	w.int(p.Depth)
	w.str(p.Via)
	w.int(p.Status)
	w.str(p.ContentType)
	w.str(p.Title)
	w.str(p.Lang)
	w.str(p.TextLang)
	w.float(p.TextLangConf)
	w.class(p.Class)
	w.str(p.DuplicateOf)
	w.uint(p.OriginalID)
	w.float(p.Similarity)
	w.str(p.Method)
	w.time(p.FetchedAt)
	w.float(p.DurationMS)
	w.str(p.Error)
	w.str(p.ErrorClass)
	w.str(p.RemoteIP)
	w.uint(uint64(len(p.Redirects)))
	for _, r := range p.Redirects {
		w.str(r)
	}
	w.str(p.Canonical)
	w.int(p.Words)
	w.int(p.Links)
	w.int(p.Bytes)
	w.str(p.SHA256)
	w.str(p.SHA1)
	w.uint(p.Simhash)
	w.str(p.ETag)
	w.str(p.LastModified)
	var flags uint64
	for _, f := range []struct {
		on   bool
		flag uint64
	}{{p.NoIndex, flagNoIndex}, {p.NoFollow, flagNoFollow}, {p.Verify, flagVerify}, {p.HasRaw, flagHasRaw}, {p.Revisit != nil, flagRevisit}} {
		if f.on {
			flags |= f.flag
		}
	}
	w.uint(flags)
	if rv := p.Revisit; rv != nil {
		w.int(rv.Round)
		w.str(rv.Change)
		w.int(rv.Status)
		w.time(rv.FetchedAt)
		w.float(rv.Similarity)
		w.str(rv.Error)
		w.str(rv.Location)
		w.str(rv.Profile)
		w.bytes(rv.Request)
		w.bytes(rv.Response)
		w.str(rv.PrevSHA1)
		w.time(rv.PrevFetchedAt)
		w.int(rv.Visits)
		w.int(rv.Changes)
		var f uint64
		if rv.Settled {
			f |= rvSettled
		}
		if rv.Conditional {
			f |= rvConditional
		}
		if rv.Truncated {
			f |= rvTruncated
		}
		w.uint(f)
	}
	return w.b
}

// decodePage decodes a stored page record, binary or (from an older store)
// JSON, into p. Any bytes return an error or a page, never a panic.
func decodePage(b []byte, p *Page) error {
	*p = Page{}
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", errRecord)
	}
	switch b[0] {
	case '{':
		return json.Unmarshal(b, p)
	case recordV1:
	default:
		return fmt.Errorf("%w: unknown version byte %#x", errRecord, b[0])
	}
	r := recordReader{b: b[1:]}
	p.ID = r.uint()
	p.URL = r.str()
	p.FinalURL = r.str()
	p.Host = r.str()
	p.Depth = r.int()
	p.Via = r.str()
	p.Status = r.int()
	p.ContentType = r.str()
	p.Title = r.str()
	p.Lang = r.str()
	p.TextLang = r.str()
	p.TextLangConf = r.float()
	p.Class = r.class()
	p.DuplicateOf = r.str()
	p.OriginalID = r.uint()
	p.Similarity = r.float()
	p.Method = r.str()
	p.FetchedAt = r.time()
	p.DurationMS = r.float()
	p.Error = r.str()
	p.ErrorClass = r.str()
	p.RemoteIP = r.str()
	if n := r.count(); n > 0 {
		p.Redirects = make([]string, n)
		for i := range p.Redirects {
			p.Redirects[i] = r.str()
		}
	}
	p.Canonical = r.str()
	p.Words = r.int()
	p.Links = r.int()
	p.Bytes = r.int()
	p.SHA256 = r.str()
	p.SHA1 = r.str()
	p.Simhash = r.uint()
	p.ETag = r.str()
	p.LastModified = r.str()
	flags := r.uint()
	p.NoIndex = flags&flagNoIndex != 0
	p.NoFollow = flags&flagNoFollow != 0
	p.Verify = flags&flagVerify != 0
	p.HasRaw = flags&flagHasRaw != 0
	if flags&flagRevisit != 0 {
		rv := &Revisit{}
		rv.Round = r.int()
		rv.Change = r.str()
		rv.Status = r.int()
		rv.FetchedAt = r.time()
		rv.Similarity = r.float()
		rv.Error = r.str()
		rv.Location = r.str()
		rv.Profile = r.str()
		rv.Request = r.bytes()
		rv.Response = r.bytes()
		rv.PrevSHA1 = r.str()
		rv.PrevFetchedAt = r.time()
		rv.Visits = r.int()
		rv.Changes = r.int()
		f := r.uint()
		rv.Settled = f&rvSettled != 0
		rv.Conditional = f&rvConditional != 0
		rv.Truncated = f&rvTruncated != 0
		p.Revisit = rv
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%w: %d bytes after its end", errRecord, len(r.b))
	}
	if r.err != nil {
		*p = Page{}
	}
	return r.err
}

type recordWriter struct{ b []byte }

func (w *recordWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *recordWriter) int(v int)     { w.b = binary.AppendVarint(w.b, int64(v)) }
func (w *recordWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *recordWriter) bytes(s []byte) {
	// nil and empty differ in JSON (omitempty drops both): both read back as nil.
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *recordWriter) float(f float64) { w.uint(bits.ReverseBytes64(math.Float64bits(f))) }

// time writes t's Unix seconds and nanoseconds and its zone offset in
// seconds, as JSON's RFC 3339 form keeps them; the zero time is one byte.
func (w *recordWriter) time(t time.Time) {
	if t.IsZero() {
		w.uint(0)
		return
	}
	_, off := t.Zone()
	w.uint(1)
	w.b = binary.AppendVarint(w.b, t.Unix())
	w.uint(uint64(t.Nanosecond()))
	w.b = binary.AppendVarint(w.b, int64(off))
}

func (w *recordWriter) class(c Class) {
	for i, k := range Classes {
		if k == c {
			w.uint(uint64(i + 1))
			return
		}
	}
	w.uint(0)
	w.str(string(c))
}

// recordReader reads what recordWriter wrote; the first error sticks and
// every later read returns the zero value.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errRecord, what)
	}
	r.b = nil
}

// varint reads one varint with read (binary.Uvarint or binary.Varint).
func varint[T uint64 | int64](r *recordReader, read func([]byte) (T, int)) T {
	v, n := read(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) uint() uint64 { return varint(r, binary.Uvarint) }

func (r *recordReader) int64() int64 { return varint(r, binary.Varint) }

func (r *recordReader) int() int {
	v := r.int64()
	if v != int64(int(v)) {
		r.fail("integer out of range")
		return 0
	}
	return int(v)
}

// count reads a length that the rest of the record must be able to hold
// (every element takes at least one byte).
func (r *recordReader) count() int {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail("length past the end")
		return 0
	}
	return int(n)
}

func (r *recordReader) raw() []byte {
	n := r.count()
	if r.err != nil || n == 0 {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *recordReader) str() string    { return string(r.raw()) }
func (r *recordReader) bytes() []byte  { return append([]byte(nil), r.raw()...) }
func (r *recordReader) float() float64 { return math.Float64frombits(bits.ReverseBytes64(r.uint())) }

func (r *recordReader) time() time.Time {
	switch r.uint() {
	case 0:
		return time.Time{}
	case 1:
	default:
		r.fail("bad time")
		return time.Time{}
	}
	sec := r.int64()
	nsec := r.uint()
	off := r.int()
	if r.err != nil || nsec >= 1e9 || off <= -86400 || off >= 86400 {
		r.fail("bad time")
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec))
	if off == 0 {
		return t.UTC()
	}
	// As time.Parse reads an RFC 3339 offset: the local zone when it has
	// that offset then, else a fixed zone.
	if _, local := t.Zone(); local == off {
		return t
	}
	return t.In(time.FixedZone("", off))
}

func (r *recordReader) class() Class {
	i := r.uint()
	if i == 0 {
		return Class(r.str())
	}
	if i > uint64(len(Classes)) {
		r.fail("bad class")
		return ""
	}
	return Classes[i-1]
}
