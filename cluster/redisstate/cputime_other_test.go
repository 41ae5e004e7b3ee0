//go:build !unix && e2e

package redisstate

import "time"

// cpuTime is unknown here: BenchmarkPageRoundTrips reports 0.
func cpuTime() time.Duration { return 0 }
