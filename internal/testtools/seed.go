package testtools

import (
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
