package main

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestDedupCurveMeasured: `crawler dedup curve` prints the measured
// end-to-end columns next to the filter's theory, for AltaVista and Bing:
// at J >= 0.95 the settled column reaches the theory (less 4 standard
// deviations of a share over the pairs), below 0.95 it is 0, and the sketch
// rule's column falls short at 0.95.
func TestDedupCurveMeasured(t *testing.T) {
	const pairs = 300
	for _, filter := range []string{"altavista", "bing"} {
		t.Run(filter, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), []string{"dedup", "curve", "--filter", filter, "--pairs", strconv.Itoa(pairs)}, &out, &errOut); err != nil {
				t.Fatalf("dedup curve: %v\n%s", err, errOut.String())
			}
			if !strings.Contains(out.String(), "  Jaccard    theory   settled    sketch\n") {
				t.Fatalf("no measured columns:\n%s", out.String())
			}
			rows := 0
			for _, line := range strings.Split(out.String(), "\n") {
				f := strings.Fields(line)
				if len(f) < 4 {
					continue
				}
				var v [4]float64
				ok := true
				for i := range v {
					x, err := strconv.ParseFloat(f[i], 64)
					v[i], ok = x, ok && err == nil
				}
				if !ok {
					continue
				}
				rows++
				j, theory, settled, sketch := v[0], v[1], v[2], v[3]
				switch {
				case j < 0.95 && settled != 0:
					t.Errorf("J = %g: settled column %g, want 0", j, settled)
				case j >= 0.95 && settled < theory-4*math.Sqrt(theory*(1-theory)/pairs):
					t.Errorf("J = %g: settled column %g below the theory %g", j, settled, theory)
				}
				if j == 0.95 && sketch >= theory-0.1 {
					t.Errorf("J = 0.95: sketch rule column %g, want well below the theory %g", sketch, theory)
				}
			}
			if rows != 17 {
				t.Errorf("%d rows, want 17:\n%s", rows, out.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dedup", "curve", "--pairs", "0"}, &out, &errOut); err == nil {
		t.Error("--pairs 0 accepted")
	}
}
