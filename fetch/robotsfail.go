package fetch

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Incurable reports whether a request that failed with err would fail the same way if retried
// soon, so that a crawler may give up at once instead of retrying on a schedule:
//
//   - an address refused by the policy (class "private"): the policy does not change;
//   - a TLS failure (class "tls": an untrusted, expired or mismatched certificate, a failed
//     handshake): a certificate is not fixed within minutes;
//   - a name that does not exist (NXDOMAIN; other DNS failures, SERVFAIL or timeouts, are
//     transient);
//   - a refused connection (nothing listens on the port; unreachable networks are transient:
//     they are what a short outage of our own link looks like).
//
// Timeouts, resets, 5xx and 429 answers are transient.
func Incurable(err error) bool {
	var fe *Error
	if !errors.As(err, &fe) {
		return false
	}
	switch fe.Class {
	case ClassPrivate, ClassTLS:
		return true
	case ClassDNS:
		var de *net.DNSError
		return errors.As(err, &de) && de.IsNotFound
	case ClassConnect:
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	return false
}

// robotsCause describes why a robots.txt is unavailable: the transport failure, or the status.
func robotsCause(e RobotsEntry) string {
	if e.Err != "" && e.Status == 0 {
		return e.Err
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

// Cause says why the robots.txt is unavailable ("connect: ... connection refused", "tls: ...",
// "HTTP 503"); "" when it is available.
func (r *Robots) Cause() string {
	if !r.unavailable {
		return ""
	}
	if r.cause == "" {
		return fmt.Sprintf("HTTP %d", r.status)
	}
	return r.cause
}

// Incurable reports whether the robots.txt is unavailable for a reason retrying cannot cure soon
// (see the function Incurable): the host can be given up at once.
func (r *Robots) Incurable() bool { return r.unavailable && r.incurable }
