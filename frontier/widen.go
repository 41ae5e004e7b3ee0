package frontier

import (
	"errors"
	"fmt"
)

// Widen makes the scope admit what seeds (canonical URLs added while the
// crawl runs) admit, as if they had been given to NewScope. The allow and
// deny lists still apply: a seed they exclude, or one that is not a URL, is
// an error wrapping ErrScope, and the scope is left as it was. It is safe
// to call while InScope runs.
func (s *Scope) Widen(seeds []string) error {
	s.widen.Lock()
	defer s.widen.Unlock()
	set, errs := s.withSeeds(s.seeds.Load(), seeds)
	for _, u := range seeds {
		if s.Excluded(u) {
			errs = append(errs, fmt.Errorf("seed %s is excluded by crawl.allow or crawl.deny", u))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrScope, errors.Join(errs...))
	}
	s.seeds.Store(set)
	return nil
}

// Excluded reports whether the allow and deny lists keep u out whatever the
// seeds: a Deny regexp matches it, or Allow is set and none matches it.
func (s *Scope) Excluded(u string) bool { return s.denied(u) || !s.allowed(u) }
