//go:build !unix

package redisstate

import "time"

// cpuTime is unknown here: BenchmarkPageRoundTrips reports 0.
func cpuTime() time.Duration { return 0 }
