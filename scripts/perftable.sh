#!/usr/bin/env bash
# Runs the performance-at-scale benchmarks (internal/testing/perfbench) COUNT times,
# interleaving all benchmarks in every round so that machine noise falls on
# the client and its floors alike, then prints benchstat's summary and the
# table with the ratios to the raw-ADS and unmarshal floors.
#
#   scripts/perftable.sh [COUNT [BENCH_REGEXP]]     # defaults: 6, BenchmarkPerf
#
# The raw results are kept in $PERF_OUT (default: a new file under /tmp,
# named at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-6}
bench=${2:-BenchmarkPerf}
out=${PERF_OUT:-$(mktemp "${TMPDIR:-/tmp}/perf.XXXXXX.txt")}

PATH="$PATH:$(go env GOPATH)/bin"
if ! command -v benchstat >/dev/null 2>&1; then
  echo "benchstat not found: go install golang.org/x/perf/cmd/benchstat@latest" >&2
  exit 1
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/perfbench.test" ./internal/testing/perfbench
: > "$out"
for i in $(seq "$count"); do
  echo "round $i of $count" >&2
  "$bin/perfbench.test" -test.run '^$' -test.bench "$bench" -test.benchmem >> "$out"
done

echo "# $(date -u +%Y-%m-%d) $(nproc) vCPU, $(go version | cut -d' ' -f3), count=$count"
echo
benchstat "$out"
echo
go run ./internal/testing/perfbench/perftable "$out"
echo
echo "raw results: $out" >&2
