package frontier

import (
	"errors"
	"fmt"
)

// Widen makes the scope admit what seeds (canonical URLs added while the
// crawl runs) admit, as if they had been given to NewScope. The allow and
// deny lists still apply. It is safe to call while InScope runs.
func (s *Scope) Widen(seeds []string) error {
	s.widen.Lock()
	defer s.widen.Unlock()
	set, errs := s.withSeeds(s.seeds.Load(), seeds)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrScope, errors.Join(errs...))
	}
	s.seeds.Store(set)
	return nil
}
