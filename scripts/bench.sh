#!/usr/bin/env bash
# Benchmarks: TAU reader throughput and synth write throughput.
# Prints a Markdown table to paste into docs/benchmarks.md.
#   scripts/bench.sh [reader|synth|all]   (default: all)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck disable=SC1091
. scripts/env.sh
WHAT="${1:-all}"
cargo build --release --quiet
BIN="$ROOT/target/release/chimbuko-mpi"
OUT="${CHIMBUKO_BENCH_OUT:-$ROOT/out/bench}"
mkdir -p "$OUT"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GiB; $(date -u +%Y-%m-%d)"
echo

if [ "$WHAT" = reader ] || [ "$WHAT" = all ]; then
  echo "| reader: engine | rows | run 1 (M rows/s) | run 2 | run 3 |"
  echo "|---|---|---|---|---|"
  for engine in BP4 BP5; do
    dir="$OUT/reader-$engine"
    rm -rf "$dir"
    "$BIN" synth scenarios/reader-bench.toml --engine "$engine" --out "$dir" >/dev/null
    stream="$dir/tau-metrics-readerbench-0.bp"
    rates=()
    rows=0
    for _ in 1 2 3; do
      line="$("$BIN" dump --summary "$stream")"
      rows="$(sed -n 's/^TOTAL func_events=\([0-9]*\).*/\1/p' <<<"$line")"
      rates+=("$(sed -n 's/.*: \([0-9.]*\) M function rows\/s/\1/p' <<<"$line")")
    done
    echo "| $engine | $rows | ${rates[0]} | ${rates[1]} | ${rates[2]} |"
  done
  echo
fi

if [ "$WHAT" = synth ] || [ "$WHAT" = all ]; then
  echo "| synth: scenario | engine | function rows | seconds | M rows/s |"
  echo "|---|---|---|---|---|"
  for engine in BP4 BP5; do
    dir="$OUT/large-$engine"
    rm -rf "$dir"
    line="$("$BIN" synth scenarios/large.toml --engine "$engine" --out "$dir" | head -1)"
    rows="$(sed -n 's/.*: \([0-9]*\) function .*/\1/p' <<<"$line")"
    secs="$(sed -n 's/.*; \([0-9.]*\) s (.*/\1/p' <<<"$line")"
    rate="$(sed -n 's/.*(\([0-9.]*\) M function rows\/s).*/\1/p' <<<"$line")"
    echo "| large.toml | $engine | $rows | $secs | $rate |"
  done
fi
