package fetch

import (
	"errors"
	"fmt"
	"regexp"
)

// Validate reports every invalid option at once, as a configuration gives
// them (every field set; NewRobotsCache still fills zero fields).
func (o RobotsOptions) Validate() error {
	var errs []error
	if o.TTL <= 0 {
		errs = append(errs, fmt.Errorf("robots.txt cache: ttl must be > 0, got %s", o.TTL))
	}
	if o.RetryInterval <= 0 {
		errs = append(errs, fmt.Errorf("robots.txt cache: retry_interval must be > 0, got %s", o.RetryInterval))
	}
	return errors.Join(errs...)
}

// hostNameRE is a DNS name (letters, digits, '-' and '_' labels).
var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)

// validHostName reports whether h can name a host.
func validHostName(h string) bool { return len(h) <= 253 && hostNameRE.MatchString(h) }
