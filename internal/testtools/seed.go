package testtools

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SeedEnv names the one environment variable that sets the seed of every
// random choice of the end-to-end tests.
const SeedEnv = "HORSESHOE_SEED"

// Seed returns the seed of tb's random choices: $HORSESHOE_SEED if set,
// else one from the clock. It logs the seed and, if tb fails, the command
// that replays the failure (pkg is the package's path from the repository
// root, e.g. "./cmd/crawler/").
func Seed(tb testing.TB, pkg string) uint64 {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: not an unsigned integer", SeedEnv, s)
		}
		seed = n
	}
	tb.Logf("seed %d (%s)", seed, SeedEnv)
	name, _, _ := strings.Cut(tb.Name(), "/")
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("replay: %s=%d go test -tags e2e -run '^%s$' %s", SeedEnv, seed, name, pkg)
		}
	})
	return seed
}

// FlagSeed returns seed, the value of a test's own seed flag (named flag,
// without its dash), or a new random one when it is 0, and logs it with the
// flag that replays it.
func FlagSeed(tb testing.TB, seed uint64, flag string) uint64 {
	tb.Helper()
	if seed == 0 {
		seed = rand.Uint64()
	}
	tb.Logf("seed %d (-%s to replay)", seed, flag)
	return seed
}
