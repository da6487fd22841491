#!/usr/bin/env bash
# Checks that two builds of chimbuko-mpi give the same results:
# - for the `large` and `multimodal` scenarios and the real TAU fixture,
#   with every detector at 1 and 2 AD ranks, the JSON export of the
#   provenance file, `--model-out` and the label CSVs;
# - for every real ROSS fixture at 1 and 2 AD ranks, `ross`'s printed
#   summary, its `--summary-out` JSON and the JSON export of its
#   provenance file (but `metadata.json`: command line and times);
# - `model train` on Eiger's training table (every profile), the model
#   file and what it prints;
# - the data `synth` writes for two coupled (incidents) and three ROSS
#   scenarios (but ADIOS2's `profiling.json`: timings);
# must be byte-identical.
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

# ROSS: the real fixtures, post hoc, at 1 and 2 AD ranks.
ross_one() { # BINARY OUTDIR FIXTURE NP
  local bin="$1" out="$2" fixture="$3" np="$4"
  rm -rf "$out"
  mkdir -p "$out"
  mpirun "${MPIRUN_FLAGS[@]}" -np "$np" "$bin" ross "$ROOT/tests/fixtures/ross/$fixture" \
    --out "$out/prov.h5" --summary-out "$out/summary.json" >"$out/stdout.txt" 2>"$out/stderr.txt"
  "$bin" export --json "$out/prov.h5" "$out/json" >/dev/null
  rm "$out/prov.h5"
}
for dir in "$ROOT"/tests/fixtures/ross/*/; do
  fixture="$(basename "$dir")"
  for np in 1 2; do
    old="$WORK/old-ross-$fixture-$np"
    new="$WORK/new-ross-$fixture-$np"
    if [ ! -f "$old/done" ] || [ "$(cat "$old/done")" != "$OLD" ]; then
      ross_one "$OLD" "$old" "$fixture" "$np"
      echo "$OLD" >"$old/done"
    fi
    [ -n "$NEW_TOO" ] || continue
    ross_one "$NEW" "$new" "$fixture" "$np"
    # metadata.json holds the command line and the run's times.
    if diff -rq -x metadata.json "$old/json" "$new/json" >/dev/null &&
      cmp -s "$old/summary.json" "$new/summary.json" &&
      cmp -s "$old/stdout.txt" "$new/stdout.txt"; then
      echo "same: ross $fixture np=$np"
    else
      echo "DIFFERENT: ross $fixture np=$np (see $old and $new)"
      failed=1
    fi
  done
done

# Performance models: Eiger's training table, every profile.
train_one() { # BINARY OUTDIR PROFILE
  local bin="$1" out="$2" profile="$3"
  rm -rf "$out"
  mkdir -p "$out"
  "$bin" model train "$ROOT/tests/fixtures/eiger/training.csv" --profile "$profile" \
    -o "$out/model" >"$out/stdout.txt" 2>"$out/stderr.txt"
  # The messages name the output file: compare them without it.
  sed -i "s#$out#OUT#g" "$out/stdout.txt" "$out/stderr.txt"
}
for profile in default eiger-2013 eiger-2016; do
  old="$WORK/old-train-$profile"
  new="$WORK/new-train-$profile"
  if [ ! -f "$old/done" ] || [ "$(cat "$old/done")" != "$OLD" ]; then
    train_one "$OLD" "$old" "$profile"
    echo "$OLD" >"$old/done"
  fi
  [ -n "$NEW_TOO" ] || continue
  train_one "$NEW" "$new" "$profile"
  if cmp -s "$old/model" "$new/model" && cmp -s "$old/stdout.txt" "$new/stdout.txt" &&
    cmp -s "$old/stderr.txt" "$new/stderr.txt"; then
    echo "same: model train --profile $profile"
  else
    echo "DIFFERENT: model train --profile $profile (see $old and $new)"
    failed=1
  fi
done
# What `synth` writes: coupled TAU scenarios and ROSS scenarios.
for scen in incidents-halo incidents-ring ross-storm ross-hotspot ross-slowpe; do
  sub=""
  case "$scen" in ross-*) sub="ross" ;; esac
  old="$WORK/old-synth-$scen"
  new="$WORK/new-synth-$scen"
  if [ ! -f "$old.done" ] || [ "$(cat "$old.done")" != "$OLD" ]; then
    rm -rf "$old"
    "$OLD" synth $sub "$ROOT/scenarios/$scen.toml" --out "$old" >/dev/null
    echo "$OLD" >"$old.done"
  fi
  [ -n "$NEW_TOO" ] || continue
  rm -rf "$new"
  "$NEW" synth $sub "$ROOT/scenarios/$scen.toml" --out "$new" >/dev/null
  if diff -rq -x profiling.json "$old" "$new" >/dev/null; then
    echo "same: synth $scen"
  else
    echo "DIFFERENT: synth $scen (see $old and $new)"
    failed=1
  fi
done
exit "$failed"
