#!/usr/bin/env bash
# One command: install what is missing, build, and run the demo on the
# built-in scenario (a synthetic 4-rank TAU trace with injected anomalies).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
. scripts/env.sh

echo "[demo] building (release)"
cargo build --release --quiet
BIN="$ROOT/target/release/chimbuko-mpi"
OUT="${CHIMBUKO_DEMO_OUT:-$ROOT/out/demo}"
rm -rf "$OUT"
mkdir -p "$OUT"

echo "[demo] writing the demo trace (4 ranks, BP5) to $OUT"
"$BIN" synth --out "$OUT"
echo "[demo] what rank 0's stream holds:"
"$BIN" dump "$OUT/tau-metrics-demo-0.bp"
echo "[demo] ground truth: $(($(wc -l <"$OUT/truth-demo.csv") - 1)) injected anomalous executions in $OUT/truth-demo.csv"
