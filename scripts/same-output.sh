#!/usr/bin/env bash
# Checks that two builds of chimbuko-mpi give the same results: for the
# `large` and `multimodal` scenarios and the real TAU fixture, with every
# detector at 1 and 2 AD ranks, the JSON export of the provenance file,
# `--model-out` and the label CSVs must be byte-identical.
#
#   bash scripts/same-output.sh OLD_BINARY NEW_BINARY [WORKDIR]
#   bash scripts/same-output.sh OLD_BINARY "" WORKDIR   # old outputs only
#
# Use it around a refactoring: build the old commit's release binary, copy
# it aside, then build the new one. The old binary's outputs are kept in
# WORKDIR and reused. Exits non-zero if any output differs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
. "$ROOT/scripts/env.sh"
OLD="$(realpath "$1")"
NEW="${2:+$(realpath "$2")}"
# Without NEW_BINARY only the old outputs are made (and kept in WORKDIR).
NEW_TOO="$NEW"
WORK="${3:-$(mktemp -d)}"
mkdir -p "$WORK"
read -r -a MPIRUN_FLAGS <<<"$CHIMBUKO_MPIRUN_FLAGS"

# Inputs: the two scenarios (written once) and the real TAU fixture.
for scen in large multimodal; do
  if [ ! -d "$WORK/data/$scen" ]; then
    "$OLD" synth "$ROOT/scenarios/$scen.toml" --out "$WORK/data/$scen" >/dev/null
  fi
done
FIX="$ROOT/tests/fixtures/tau/simple_workflow"

inputs_of() {
  case "$1" in
    large | multimodal)
      local bin
      bin="$(basename "$(ls -d "$WORK/data/$1"/*-0.bp)" | sed -E 's/^tau-metrics-(.*)-0\.bp$/\1/')"
      echo "--input $WORK/data/$1/tau-metrics-$bin-{rank}.bp"
      ;;
    tau)
      echo "--engine BP4 --input $FIX/tau-metrics-main1-{rank}.bp --input $FIX/tau-metrics-main2-{rank}.bp"
      ;;
  esac
}

run_one() { # BINARY OUTDIR INPUT ALG NP
  local bin="$1" out="$2" input="$3" alg="$4" np="$5"
  rm -rf "$out"
  mkdir -p "$out"
  # shellcheck disable=SC2046
  mpirun "${MPIRUN_FLAGS[@]}" -np "$np" "$bin" run $(inputs_of "$input") \
    --algorithm "$alg" --quiet --out "$out/prov.h5" --model-out "$out/model.json" \
    --labels-out "$out/labels" >"$out/stdout.txt" 2>"$out/stderr.txt"
  "$bin" export --json "$out/prov.h5" "$out/json" >/dev/null
  rm "$out/prov.h5"
}

failed=0
for input in large multimodal tau; do
  for alg in sstd hbos copod modal; do
    for np in 1 2; do
      old="$WORK/old-$input-$alg-$np"
      new="$WORK/new-$input-$alg-$np"
      # The old binary's outputs are kept between calls (same binary path).
      if [ ! -f "$old/done" ] || [ "$(cat "$old/done")" != "$OLD" ]; then
        run_one "$OLD" "$old" "$input" "$alg" "$np"
        echo "$OLD" >"$old/done"
      fi
      [ -n "$NEW_TOO" ] || continue
      run_one "$NEW" "$new" "$input" "$alg" "$np"
      if diff -rq "$old/json" "$new/json" >/dev/null &&
        cmp -s "$old/model.json" "$new/model.json" &&
        diff -rq "$old/labels" "$new/labels" >/dev/null; then
        echo "same: $input $alg np=$np ($(cat "$new/labels"/*.csv | wc -l) label rows)"
      else
        echo "DIFFERENT: $input $alg np=$np (see $old and $new)"
        failed=1
      fi
    done
  done
done
exit "$failed"
