#!/usr/bin/env bash
# One command: install what is missing, build, and run the demo on the
# built-in scenario: a synthetic 4-rank application streams its TAU trace
# (with injected anomalies) over SST while 2 AD ranks analyse it live in the
# same mpirun; the run is scored against the ground truth and its provenance
# file summarised.
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

# In situ: the "application" (synth as a 4-rank MPI job writing TAU-format
# streams over SST, paced like an application) and the AD (2 ranks) in one
# mpirun -- the MPMD form of jobscripts/mpirun-mpmd.sh.
echo "[demo] in situ over SST: 4 application ranks : 2 AD ranks, one mpirun (MPMD)"
echo "       mpirun -np 4 chimbuko-mpi synth --mpi --engine SST ... : -np 2 chimbuko-mpi run --engine SST ..."
# shellcheck disable=SC2086
mpirun $CHIMBUKO_MPIRUN_FLAGS \
  -np 4 "$BIN" synth --mpi --engine SST --out "$OUT" --pace-ms 100 \
  : -np 2 "$BIN" run --engine SST --app-ranks 4 \
  --input "$OUT/tau-metrics-demo-{rank}.bp" \
  --truth "$OUT/truth-demo.csv" \
  --out "$OUT/provenance.h5" \
  --stats-out "$OUT/live-stats.jsonl" \
  --labels-out "$OUT/labels" \
  --model-out "$OUT/model.json" \
  --summary-out "$OUT/summary.json" \
  --report "$OUT/report.html" \
  --progress-every 2
echo "[demo] provenance (HDF5): $OUT/provenance.h5 -- summary:"
"$BIN" inspect "$OUT/provenance.h5" --top 5 | sed -n '/anomalies (/,$p'
echo "[demo] the report, one HTML file to open in a browser (offline): $OUT/report.html"
echo "[demo] read it with h5py/pandas: $PYTHON docs/examples/read_provenance.py $OUT/provenance.h5"
echo "[demo] live statistics (one JSON document per step): $OUT/live-stats.jsonl"
echo "[demo] labels of every execution: $OUT/labels/labels-<ad rank>.csv; final model: $OUT/model.json"
echo "[demo] post hoc on files instead: chimbuko-mpi synth --out DIR; mpirun -np 2 chimbuko-mpi run --input 'DIR/tau-metrics-demo-{rank}.bp'"
