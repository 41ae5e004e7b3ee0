package frontier

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// MaxURLLimit bounds TrapOptions.MaxURLLength: a URL is part of store keys,
// some of which hold two URLs (a skipped copy and the page it waits on), and
// Badger refuses keys above 65,000 bytes.
const MaxURLLimit = 16 << 10

// Validate reports every invalid option at once. It checks options as a
// configuration gives them, every field set (New still fills zero fields of
// options built in code).
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("frontier: "+format, a...)) }
	if o.Delay < 0 {
		bad("delay must be >= 0, got %s", o.Delay)
	}
	if o.AdaptiveFactor < 0 || o.AdaptiveFactor > 100 {
		bad("adaptive_factor must be between 0 and 100, got %g", o.AdaptiveFactor)
	}
	if o.MaxDelay < o.Delay {
		bad("max_delay (%s) must be >= delay (%s)", o.MaxDelay, o.Delay)
	}
	if o.BackoffBase <= 0 || o.BackoffMax < o.BackoffBase {
		bad("backoff_base must be > 0 and <= backoff_max, got %s and %s", o.BackoffBase, o.BackoffMax)
	}
	if o.MaxFailures < 1 {
		bad("max_failures must be >= 1, got %d", o.MaxFailures)
	}
	if o.MaxPages < 0 {
		bad("max_pages must be >= 0, got %d", o.MaxPages)
	}
	if o.MaxPagesPerHost < 0 {
		bad("max_pages_per_host must be >= 0, got %d", o.MaxPagesPerHost)
	}
	return errors.Join(errs...)
}

// Validate reports every invalid limit at once (every field set).
func (o TrapOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("frontier: "+format, a...)) }
	if o.MaxURLLength < 16 || o.MaxURLLength > MaxURLLimit {
		bad("max_url_length must be between 16 and %d, got %d", MaxURLLimit, o.MaxURLLength)
	}
	if o.MaxPathDepth < 1 {
		bad("max_path_depth must be >= 1, got %d", o.MaxPathDepth)
	}
	if o.MaxRepeatedSegment < 1 {
		bad("max_repeated_segment must be >= 1, got %d", o.MaxRepeatedSegment)
	}
	if o.MaxQueryParams < 0 {
		bad("max_query_params must be >= 0, got %d", o.MaxQueryParams)
	}
	return errors.Join(errs...)
}

// Validate reports an unknown mode and every Allow and Deny entry that is
// not a regular expression, at once (wrapping ErrScope).
func (o ScopeOptions) Validate() error {
	if errs := o.problems(); len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrScope, errors.Join(errs...))
	}
	return nil
}

// problems lists what Validate reports; NewScope adds the seeds' problems.
func (o ScopeOptions) problems() []error {
	var errs []error
	switch o.Mode {
	case "", ScopeHost, ScopeDomain, ScopePrefix, ScopeAny:
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q (want host, domain, prefix or any)", o.Mode))
	}
	for _, l := range []struct {
		kind  string
		exprs []string
	}{{"allow", o.Allow}, {"deny", o.Deny}} {
		for i, e := range l.exprs {
			if _, err := regexp.Compile(e); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d] %s: %w", l.kind, i, strconv.Quote(e), err))
			}
		}
	}
	return errs
}

// WithDefaults fills the options a frontier needs that were left zero:
// failures before a host is given up (10), back-off base (5 s) and cap, and
// a maximum delay of at least the delay. Every frontier (this one and the
// shared ones) takes its defaults from here.
func (o Options) WithDefaults() Options {
	if o.MaxFailures <= 0 {
		o.MaxFailures = 10
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 5 * time.Second
	}
	if o.BackoffMax < o.BackoffBase {
		o.BackoffMax = o.BackoffBase
	}
	if o.MaxDelay < o.Delay {
		o.MaxDelay = o.Delay
	}
	return o
}
