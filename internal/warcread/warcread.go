// Package warcread reads WARC files back for the tests: it checks every record's version line,
// Content-Length, the CRLF CRLF after the block and WARC-Block-Digest (sha1). It is a test
// helper, not an API: export writes WARC; replay tools and warcio read it.
package warcread

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Field is one named field of a record header.
type Field struct {
	Name, Value string
}

// ErrFormat marks a malformed WARC stream.
var ErrFormat = errors.New("malformed WARC")

func digest(b []byte) string {
	s := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// Record is one record read back by Read.
type Record struct {
	Version string  // "WARC/1.1"
	Header  []Field // in file order
	Block   []byte
}

// Get returns the first value of the named header field (case-insensitive).
func (r *Record) Get(name string) string {
	for _, f := range r.Header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Type returns WARC-Type.
func (r *Record) Type() string { return r.Get("WARC-Type") }

// HTTPPayload splits an application/http block into its message header
// (through the blank line) and its payload.
func (r *Record) HTTPPayload() (header, payload []byte, err error) {
	i := bytes.Index(r.Block, []byte("\r\n\r\n"))
	if i < 0 {
		return nil, nil, fmt.Errorf("%w: HTTP message without the blank line after its header", ErrFormat)
	}
	return r.Block[:i+4], r.Block[i+4:], nil
}

// maxWARCHeader bounds one record header, so a corrupt stream cannot make
// Read buffer without limit.
const maxWARCHeader = 1 << 20

// Read parses a WARC stream (plain, or gzip with any number of members)
// into its records. It checks each record's version line, Content-Length,
// the CRLF CRLF after the block, and WARC-Block-Digest when it is a sha1
// digest.
func Read(r io.Reader) ([]Record, error) {
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
	var out []Record
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

func readRecord(br *bufio.Reader) (Record, error) {
	var rec Record
	read := 0
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		read += len(s)
		if read > maxWARCHeader {
			return "", fmt.Errorf("%w: header longer than %d bytes", ErrFormat, maxWARCHeader)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", fmt.Errorf("%w: %w", ErrFormat, err)
		}
		if !strings.HasSuffix(s, "\r\n") {
			return "", fmt.Errorf("%w: header line not ended by CRLF", ErrFormat)
		}
		return s[:len(s)-2], nil
	}
	v, err := line()
	if err != nil {
		return rec, err
	}
	if v != "WARC/1.1" && v != "WARC/1.0" {
		return rec, fmt.Errorf("%w: version line %q", ErrFormat, v)
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
				return rec, fmt.Errorf("%w: continuation line before any field", ErrFormat)
			}
			f := &rec.Header[len(rec.Header)-1]
			f.Value += " " + strings.TrimSpace(s)
			continue
		}
		name, value, ok := strings.Cut(s, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return rec, fmt.Errorf("%w: header line %q", ErrFormat, s)
		}
		rec.Header = append(rec.Header, Field{Name: name, Value: strings.TrimSpace(value)})
	}
	cl := rec.Get("Content-Length")
	size, err := strconv.ParseInt(cl, 10, 64)
	if err != nil || size < 0 {
		return rec, fmt.Errorf("%w: Content-Length %q", ErrFormat, cl)
	}
	var block bytes.Buffer
	if n, err := io.CopyN(&block, br, size); err != nil {
		return rec, fmt.Errorf("%w: block is %d bytes, Content-Length says %d", ErrFormat, n, size)
	}
	rec.Block = block.Bytes()
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return rec, fmt.Errorf("%w: block not followed by CRLF CRLF (wrong Content-Length?)", ErrFormat)
	}
	if d := rec.Get("WARC-Block-Digest"); strings.HasPrefix(strings.ToLower(d), "sha1:") {
		if got := digest(rec.Block); !strings.EqualFold(got[5:], d[5:]) {
			return rec, fmt.Errorf("%w: WARC-Block-Digest %s, block hashes to %s", ErrFormat, d, got)
		}
	}
	return rec, nil
}
