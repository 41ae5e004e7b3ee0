package main

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// TestDedupCurveMeasured: `crawler dedup curve` prints the measured
// end-to-end columns next to the pipeline's theory (filter and band stage,
// at least the filter's column), for AltaVista and Bing, from 0.80 to 1 by
// 0.01:
// at J >= 0.90 (the default threshold) the settled column reaches the theory
// (less 4 standard deviations of a share over the pairs), below 0.90 it is 0,
// and at 0.90 the sketch rule's column (76 of 84 samples) falls short of the
// settled one: it keeps 47% of the pairs at J = 0.90 that settlement drops.
func TestDedupCurveMeasured(t *testing.T) {
	if raceEnabled {
		t.Skip("dedup curve runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	const pairs = 300
	for _, filter := range []string{"altavista", "bing"} {
		t.Run(filter, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), []string{"dedup", "curve", "--filter", filter, "--pairs", strconv.Itoa(pairs)}, &out, &errOut); err != nil {
				t.Fatalf("dedup curve: %v\n%s", err, errOut.String())
			}
			if !strings.Contains(out.String(), "  Jaccard    theory   settled    sketch    filter\n") {
				t.Fatalf("no measured columns:\n%s", out.String())
			}
			rows := 0
			for _, line := range strings.Split(out.String(), "\n") {
				f := strings.Fields(line)
				if len(f) < 5 {
					continue
				}
				var v [5]float64
				ok := true
				for i := range v {
					x, err := strconv.ParseFloat(f[i], 64)
					v[i], ok = x, ok && err == nil
				}
				if !ok {
					continue
				}
				rows++
				j, theory, settled, sketch, filter := v[0], v[1], v[2], v[3], v[4]
				if theory < filter {
					t.Errorf("J = %g: theory %g below the filter's %g", j, theory, filter)
				}
				switch {
				case j < dedup.DefaultThreshold && settled != 0:
					t.Errorf("J = %g: settled column %g, want 0", j, settled)
				case j >= dedup.DefaultThreshold && settled < theory-4*math.Sqrt(theory*(1-theory)/pairs):
					t.Errorf("J = %g: settled column %g below the theory %g", j, settled, theory)
				}
				if j == dedup.DefaultThreshold && sketch >= settled {
					t.Errorf("J = %g: sketch rule column %g, want below the settled %g", j, sketch, settled)
				}
			}
			if rows != 25 {
				t.Errorf("%d rows, want 25:\n%s", rows, out.String())
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"dedup", "curve", "--pairs", "0"}, &out, &errOut); err == nil {
		t.Error("--pairs 0 accepted")
	}
}
