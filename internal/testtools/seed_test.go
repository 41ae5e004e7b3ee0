package testtools

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what Seed logs and runs its
// cleanups on demand.
type recorder struct {
	testing.TB
	logs     []string
	failed   bool
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return "TestX/sub" }
func (r *recorder) Failed() bool              { return r.failed }
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.TB.Fatalf(f, a...) }

func TestSeed(t *testing.T) {
	t.Setenv(SeedEnv, "12345")
	for _, failed := range []bool{false, true} {
		r := &recorder{TB: t, failed: failed}
		if got := Seed(r, "./cmd/crawler/"); got != 12345 {
			t.Errorf("Seed = %d, want 12345 from $%s", got, SeedEnv)
		}
		for _, f := range r.cleanups {
			f()
		}
		all := strings.Join(r.logs, "\n")
		if !strings.Contains(all, "seed 12345") {
			t.Errorf("the seed is not logged: %q", all)
		}
		const replay = "replay: HORSESHOE_SEED=12345 go test -tags e2e -run '^TestX$' ./cmd/crawler/"
		if strings.Contains(all, replay) != failed {
			t.Errorf("failed=%v, logs %q: want the replay line only on failure", failed, all)
		}
	}
}
