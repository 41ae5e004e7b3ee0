#!/usr/bin/env bash
# fuzz-smoke.sh is the short fuzz run of 'make test': every fuzz target for a
# few seconds (FUZZTIME, default 3s), minimizing a failure for at most 1s,
# with at most 2 fuzzing workers. Any failure fails the run; see
# scripts/fuzz.sh for the longer 'make fuzz'.
set -euo pipefail
export FUZZTIME="${FUZZTIME:-3s}"
export FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-1s}"
export FUZZPARALLEL="${FUZZPARALLEL:-2}"
exec bash "$(dirname "$0")/fuzz.sh" "$@"
