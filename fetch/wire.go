package fetch

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The bytes of an exchange as a WARC archive keeps them: the request as sent,
// and the response with its body as stored (decoded), so that the headers
// describe that body.

// WireRequest is the HTTP/1.1 request of r (request line, Host, the request
// headers as sent), for a WARC request record.
func (r *Result) WireRequest() []byte {
	u, err := url.Parse(r.FinalURL)
	if err != nil || r.FinalURL == "" {
		u, _ = url.Parse(r.URL)
	}
	var b strings.Builder
	target := "/"
	if u != nil {
		target = RequestURI(u)
	}
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\n", target)
	if u != nil {
		fmt.Fprintf(&b, "Host: %s\r\n", u.Host)
	}
	for k, vs := range r.RequestHeader {
		if strings.EqualFold(k, "Host") {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// WireResponse is the response of r (status line, headers, RawBody), with the
// headers that describe the transfer rather than the stored payload
// (Content-Encoding, Transfer-Encoding) dropped and Content-Length set to the
// stored body's length.
func (r *Result) WireResponse() []byte {
	var b strings.Builder
	proto := r.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %d %s\r\n", proto, r.Status, http.StatusText(r.Status))
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Content-Encoding") || strings.EqualFold(k, "Transfer-Encoding") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.RawBody))
	out := make([]byte, 0, b.Len()+len(r.RawBody))
	out = append(out, b.String()...)
	return append(out, r.RawBody...)
}

// PayloadDigests returns the digests of RawBody: SHA-256 in hex (the page
// record's key for byte-identical payloads) and SHA-1 in base32 (as
// WARC-Payload-Digest writes it).
func (r *Result) PayloadDigests() (sha256Hex, sha1Base32 string) {
	s256 := sha256.Sum256(r.RawBody)
	s1 := sha1.Sum(r.RawBody)
	return hex.EncodeToString(s256[:]), base32.StdEncoding.EncodeToString(s1[:])
}

// RequestURI is the request target of u: its escaped path ("/" when empty)
// and query.
func RequestURI(u *url.URL) string {
	s := u.EscapedPath()
	if s == "" {
		s = "/"
	}
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}
