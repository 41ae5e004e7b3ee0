package main

import (
	"strings"
	"testing"
)

// A failing test's whole output is shown, a passing one's is not, the
// package lines pass through, a test that never ended shows its output, and
// the slowest passing tests are listed; a benchmark's results are shown when
// its package ends.
func TestSummarize(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA","Elapsed":0.1}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"    quiet log\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":7.5}`,
		`{"Action":"output","Package":"p","Test":"TestHung","Output":"    last words\n"}`,
		`{"Action":"output","Package":"q","Test":"BenchmarkB","Output":"=== RUN   BenchmarkB\n"}`,
		`{"Action":"output","Package":"q","Test":"BenchmarkB","Output":"BenchmarkB-2  1  42 ns/op\n"}`,
		`{"Action":"pass","Package":"q","Elapsed":0.3}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.2s\n"}`,
		`not json`,
	}, "\n")
	var out strings.Builder
	if err := summarize(strings.NewReader(in), &out, 5); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"a_test.go:3: boom", "FAIL\tp\t0.2s", "not json", "--- no result: p TestHung", "last words", "7.5s  p.TestOK", "BenchmarkB-2  1  42 ns/op"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "no result: q BenchmarkB") || strings.Contains(got, "=== RUN   BenchmarkB") {
		t.Errorf("a benchmark's results were shown as a hang, or with its RUN line:\n%s", got)
	}
	if strings.Contains(got, "quiet log") {
		t.Errorf("a passing test's log was shown:\n%s", got)
	}
}
