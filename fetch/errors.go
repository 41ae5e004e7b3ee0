package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Error classes reported in Error.Class.
const (
	ClassDNS      = "dns"
	ClassConnect  = "connect"
	ClassTimeout  = "timeout"
	ClassTLS      = "tls"
	ClassReset    = "reset"
	ClassTooLarge = "too_large"
	ClassRedirect = "redirect"
	ClassScheme   = "scheme"
	ClassPrivate  = "private"
	ClassCanceled = "canceled"
	ClassProxy    = "proxy"
	ClassFenced   = "fenced" // the request's Fence stopped it before it was written (ErrFenced)
	ClassOther    = "other"
)

// Sentinel causes, reachable with errors.Is through an *Error.
var (
	ErrTooLarge         = errors.New("body exceeds the size limit")
	ErrTooManyRedirects = errors.New("too many redirects")
	ErrRedirectLoop     = errors.New("redirect loop")
	ErrScheme           = errors.New("scheme is not http or https")
	ErrPrivateAddress   = errors.New("address is loopback, private, link-local or otherwise not public")
)

// Error is returned for transport-level failures. Non-2xx HTTP statuses are not errors.
type Error struct {
	URL   string // requested URL
	Class string // one of the Class* constants
	Err   error  // underlying cause
}

func (e *Error) Error() string {
	return "fetch " + e.URL + ": " + e.Class + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// classify maps a failure of the request made under parent to an error class. parent is the
// caller's context (before the per-request timeout was added), so cancellation by the caller is
// told apart from our own timeout.
func classify(parent context.Context, err error) string {
	switch {
	case errors.Is(err, ErrFenced):
		return ClassFenced
	case errors.Is(err, ErrPrivateAddress):
		return ClassPrivate
	case errors.Is(err, ErrTooManyRedirects), errors.Is(err, ErrRedirectLoop):
		return ClassRedirect
	case errors.Is(err, ErrScheme):
		return ClassScheme
	case errors.Is(err, ErrTooLarge):
		return ClassTooLarge
	}
	if pe := parent.Err(); pe != nil {
		if errors.Is(pe, context.DeadlineExceeded) {
			return ClassTimeout
		}
		return ClassCanceled
	}
	if errors.Is(err, ErrProxy) {
		return ClassProxy
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return ClassDNS
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ClassTimeout
	}
	if isTLSError(err) {
		return ClassTLS
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ClassReset
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL):
		return ClassConnect
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ClassConnect
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	return ClassOther
}

func isTLSError(err error) bool {
	var (
		rh   tls.RecordHeaderError
		alrt tls.AlertError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		ci   x509.CertificateInvalidError
	)
	if errors.As(err, &rh) || errors.As(err, &alrt) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return true
	}
	return strings.Contains(err.Error(), "tls: ")
}
