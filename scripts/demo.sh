#!/usr/bin/env bash
# One command: install what is missing, build, and run the demo on the
# built-in scenario: a synthetic 4-rank TAU trace with injected anomalies,
# analysed by 2 AD ranks under mpirun, scored against the ground truth.
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
echo "[demo] step 0 of rank 0's stream:"
"$BIN" dump "$OUT/tau-metrics-demo-0.bp" | sed -n '1,4p'
echo "[demo] ground truth: $(($(wc -l <"$OUT/truth-demo.csv") - 1)) injected anomalous executions in $OUT/truth-demo.csv"
echo "[demo] analysing with 2 AD ranks: mpirun $CHIMBUKO_MPIRUN_FLAGS -np 2 chimbuko-mpi run ..."
# shellcheck disable=SC2086
mpirun $CHIMBUKO_MPIRUN_FLAGS -np 2 "$BIN" run \
  --input "$OUT/tau-metrics-demo-{rank}.bp" \
  --truth "$OUT/truth-demo.csv" \
  --out "$OUT/provenance.h5" \
  --labels-out "$OUT/labels" \
  --model-out "$OUT/model.json" \
  --summary-out "$OUT/summary.json"
echo "[demo] provenance (HDF5): $OUT/provenance.h5 -- summary:"
"$BIN" inspect "$OUT/provenance.h5" --top 5 | sed -n '/anomalies (/,$p'
echo "[demo] read it with h5py/pandas: $PYTHON docs/examples/read_provenance.py $OUT/provenance.h5"
echo "[demo] labels of every execution: $OUT/labels/labels-<ad rank>.csv; final model: $OUT/model.json"
