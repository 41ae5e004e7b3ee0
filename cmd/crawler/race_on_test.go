//go:build race

package main

// raceEnabled: this test binary has the race detector.
const raceEnabled = true
