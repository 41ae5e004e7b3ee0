//go:build !race

package hostile_test

// raceEnabled: this test binary has the race detector.
const raceEnabled = false
