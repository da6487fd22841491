#!/usr/bin/env bash
# Makes docs/img/report-overview.png: the overview of the report of a
# synthetic run (4 application ranks, 2 AD ranks), drawn by headless
# Chromium. Run after `bash scripts/setup.sh`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck disable=SC1091
. scripts/env.sh
cargo build --quiet
BIN="$ROOT/target/debug/chimbuko-mpi"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$BIN" synth --out "$WORK/data" --steps 12 --events-per-step 4000 > /dev/null
# shellcheck disable=SC2086
mpirun $CHIMBUKO_MPIRUN_FLAGS -np 2 "$BIN" run --quiet \
  --input "$WORK/data/tau-metrics-demo-{rank}.bp" --out "$WORK/prov.h5" \
  --report "$WORK/report.html"
mkdir -p docs/img
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1280,900 --screenshot="$ROOT/docs/img/report-overview.png" \
  "file://$WORK/report.html" 2> /dev/null
echo "docs/img/report-overview.png"
