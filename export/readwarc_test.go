package export

// A WARC reader for the tests: it reads back what WARC writes, checking every
// record's framing and block digest. It is not part of the package's API
// (export writes WARC; replay tools and warcio read it).

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// warcRecord is one record read back by readWARC.
type warcRecord struct {
	Version string      // "WARC/1.1"
	Header  []WARCField // in file order
	Block   []byte
}

// Get returns the first value of the named header field (case-insensitive).
func (r *warcRecord) Get(name string) string {
	for _, f := range r.Header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Type returns WARC-Type.
func (r *warcRecord) Type() string { return r.Get("WARC-Type") }

// HTTPPayload splits an application/http block into its message header
// (through the blank line) and its payload.
func (r *warcRecord) HTTPPayload() (header, payload []byte, err error) {
	return splitHTTP(r.Block)
}

// maxWARCHeader bounds one record header, so a corrupt stream cannot make
// readWARC buffer without limit.
const maxWARCHeader = 1 << 20

// readWARC parses a WARC stream (plain, or gzip with any number of members)
// into its records. It checks each record's version line, Content-Length,
// the CRLF CRLF after the block, and WARC-Block-Digest when it is a sha1
// digest.
func readWARC(r io.Reader) ([]warcRecord, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("warc: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	var out []warcRecord
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return out, nil
		}
		rec, err := readRecord(br)
		if err != nil {
			return out, fmt.Errorf("warc: record %d: %w", len(out)+1, err)
		}
		out = append(out, rec)
	}
}

func readRecord(br *bufio.Reader) (warcRecord, error) {
	var rec warcRecord
	read := 0
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		read += len(s)
		if read > maxWARCHeader {
			return "", fmt.Errorf("%w: header longer than %d bytes", ErrWARCFormat, maxWARCHeader)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", fmt.Errorf("%w: %w", ErrWARCFormat, err)
		}
		if !strings.HasSuffix(s, "\r\n") {
			return "", fmt.Errorf("%w: header line not ended by CRLF", ErrWARCFormat)
		}
		return s[:len(s)-2], nil
	}
	v, err := line()
	if err != nil {
		return rec, err
	}
	if v != "WARC/1.1" && v != "WARC/1.0" {
		return rec, fmt.Errorf("%w: version line %q", ErrWARCFormat, v)
	}
	rec.Version = v
	for {
		s, err := line()
		if err != nil {
			return rec, err
		}
		if s == "" {
			break
		}
		if s[0] == ' ' || s[0] == '\t' {
			if len(rec.Header) == 0 {
				return rec, fmt.Errorf("%w: continuation line before any field", ErrWARCFormat)
			}
			f := &rec.Header[len(rec.Header)-1]
			f.Value += " " + strings.TrimSpace(s)
			continue
		}
		name, value, ok := strings.Cut(s, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return rec, fmt.Errorf("%w: header line %q", ErrWARCFormat, s)
		}
		rec.Header = append(rec.Header, WARCField{Name: name, Value: strings.TrimSpace(value)})
	}
	cl := rec.Get("Content-Length")
	size, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || size < 0 {
		return rec, fmt.Errorf("%w: Content-Length %q", ErrWARCFormat, cl)
	}
	var block bytes.Buffer
	if n, err := io.CopyN(&block, br, size); err != nil {
		return rec, fmt.Errorf("%w: block is %d bytes, Content-Length says %d", ErrWARCFormat, n, size)
	}
	rec.Block = block.Bytes()
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return rec, fmt.Errorf("%w: block not followed by CRLF CRLF (wrong Content-Length?)", ErrWARCFormat)
	}
	if d := rec.Get("WARC-Block-Digest"); strings.HasPrefix(strings.ToLower(d), "sha1:") {
		if got := WARCDigest(rec.Block); !strings.EqualFold(got[5:], d[5:]) {
			return rec, fmt.Errorf("%w: WARC-Block-Digest %s, block hashes to %s", ErrWARCFormat, d, got)
		}
	}
	return rec, nil
}
