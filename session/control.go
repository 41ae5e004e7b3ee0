package session

import (
	"fmt"
)

// AddSeeds adds seed URLs to the run's crawl while it runs (the control
// API): they are canonicalized as seeds given at the start, checked by the
// crawl (crawl.Crawl.CheckSeeds), stored with the crawl's seeds (a resumed
// crawl starts from them too) and queued. A seed that is refused is a
// *UsageError (or a *crawl.SeedError) and nothing is added. It returns the
// canonical seeds and how many were queued (not seen before).
func (s *Session) AddSeeds(raw []string) ([]string, int, error) {
	if s.crawl == nil {
		return nil, 0, fmt.Errorf("session: AddSeeds before Start")
	}
	seeds, err := CanonicalSeeds(raw, s.maxURL)
	if err != nil {
		return nil, 0, err
	}
	if err := s.crawl.CheckSeeds(seeds); err != nil {
		return nil, 0, err
	}
	s.seedMu.Lock()
	defer s.seedMu.Unlock()
	merged := Merge(s.Seeds, seeds)
	if err := s.DB.PutSeeds(merged); err != nil {
		return nil, 0, fmt.Errorf("storage: %w", err)
	}
	s.Seeds = merged
	added, err := s.crawl.AddSeeds(seeds)
	return seeds, added, err
}
