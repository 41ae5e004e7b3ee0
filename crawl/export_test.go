package crawl

// SetSkipRepairs sets, for a test of the crawl_test package, whether a URL
// skipped at lease time queues the copies waiting on it and whether the skip
// audit runs before a crawl ends; the returned func restores both.
func SetSkipRepairs(leaseTime, audit bool) (restore func()) {
	l, a := leasedSkipQueuesWaiting, auditSkips
	leasedSkipQueuesWaiting, auditSkips = leaseTime, audit
	return func() { leasedSkipQueuesWaiting, auditSkips = l, a }
}

// AuditRounds is the number of skip audits e ran (each scans the skip
// records once).
func AuditRounds(e *Engine) int { return e.audit.rounds }

// SetSeenCacheMax sets the bound of the seen cache of the engines built
// afterwards; the returned func restores it.
func SetSeenCacheMax(n int) (restore func()) {
	old := seenCacheMax
	seenCacheMax = n
	return func() { seenCacheMax = old }
}

// SetSeenFilterDesign sets the design size of the first generation of the
// seen filters built afterwards; the returned func restores it.
func SetSeenFilterDesign(n uint64) (restore func()) {
	old := seenFilterN0
	seenFilterN0 = n
	return func() { seenFilterN0 = old }
}

// SeenFilterLoaded waits for e's seen filter load and reports whether the
// filter covers the store.
func SeenFilterLoaded(e *Engine) (bool, error) {
	if e.seenFilter == nil {
		return false, nil
	}
	_, err := e.seenFilter.loaded()
	return e.seenFilter.covered.Load(), err
}
