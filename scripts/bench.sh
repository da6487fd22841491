#!/usr/bin/env bash
# Benchmarks: TAU reader throughput, synth write throughput, analysis
# throughput per detector, collective cost, memory, detection quality.
# Prints Markdown tables to paste into docs/benchmarks.md.
#   scripts/bench.sh [reader|synth|run|quality|all]   (default: all)
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

read -r -a MPIRUN <<<"mpirun $CHIMBUKO_MPIRUN_FLAGS"
ALGORITHMS=(sstd hbos copod modal)
field() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# Bytes one AD rank contributes to the model reduction per function and step
# (averaged over the run): SSTD sends its exact moments, min and max (28
# words); the histogram detectors add an 8-word group mask in round 1 and
# 16 counts per touched bucket group in round 2 (see docs/algorithms.md).
payload() {
  field "$1" "(lambda fs: 224 if d['functions'][0]['model']['algorithm'] == 'sstd' else round(288 + 128 * sum(f['model']['fine_histogram']['groups_merged'] for f in fs) / (max(d['steps'], 1) * max(len(fs), 1))))([f for f in d['functions']])"
}

if [ "$WHAT" = run ] || [ "$WHAT" = all ]; then
  data="$OUT/large-BP5"
  [ -d "$data/tau-metrics-large-0.bp" ] || "$BIN" synth scenarios/large.toml --engine BP5 --out "$data" >/dev/null
  echo
  echo "| run: large.toml | algorithm | AD ranks | function events | seconds | M function events/s per AD rank | ms/step read | agree | build | summarize | reduce | label | status | peak RSS MB | reduce bytes/function/step |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for alg in "${ALGORITHMS[@]}"; do
    for np in 1 2; do
      sum="$OUT/run-large-$alg-$np.json"
      "${MPIRUN[@]}" -np "$np" "$BIN" run --quiet --algorithm "$alg" --input "$data/tau-metrics-large-{rank}.bp" --summary-out "$sum" >/dev/null
      fe=$(field "$sum" "sum(f['executions'] for f in d['functions'])*2")
      echo "| | $alg | $np | $fe | $(field "$sum" "round(d['seconds'],3)") | $(field "$sum" "round($fe/d['seconds']/1e6/$np,2)") | $(field "$sum" "' | '.join('%.2f' % (t*1e3/d['steps']) for n,t in d['timings'])") | $(field "$sum" "round(d['peak_rss_mb'])") | $(payload "$sum") |"
    done
  done

  echo
  echo "| collectives: functions | algorithm | AD ranks | ms/step agree | reduce | status | total | reduce bytes/function/step |"
  echo "|---|---|---|---|---|---|---|---|"
  for nf in 100 1000 10000; do
    dir="$OUT/functions-$nf"
    scen="$OUT/functions-$nf.toml"
    {
      echo "seed = 1"; echo "binary = \"fn$nf\""; echo "ranks = 2"; echo "steps = 10"
      echo "events_per_step = $((4 * nf + 8))"; echo "root = \"loop\""
      echo '[[function]]'; echo 'name = "main"'; echo 'runtime = { dist = "constant", value = 5 }'
      echo '[[function]]'; echo 'name = "loop"'; echo 'runtime = { dist = "constant", value = 5 }'
      printf 'children = ['; for i in $(seq 1 "$nf"); do printf '{ function = "f%d" },' "$i"; done; echo ']'
      for i in $(seq 1 "$nf"); do
        echo '[[function]]'; echo "name = \"f$i\""; echo 'runtime = { dist = "normal", mean = 20, std = 2 }'
      done
    } >"$scen"
    rm -rf "$dir"
    "$BIN" synth "$scen" --out "$dir" >/dev/null
    for alg in "${ALGORITHMS[@]}"; do
      sum="$OUT/run-functions-$nf-$alg.json"
      "${MPIRUN[@]}" -np 2 "$BIN" run --quiet --algorithm "$alg" --input "$dir/tau-metrics-fn$nf-{rank}.bp" --summary-out "$sum" >/dev/null
      echo "| $nf | $alg | 2 | $(field "$sum" "' | '.join('%.3f' % (dict(d['timings'])[k]*1e3/d['steps']) for k in ('agree','reduce','status'))") | $(field "$sum" "'%.3f' % (sum(dict(d['timings'])[k] for k in ('agree','reduce','status'))*1e3/d['steps'])") | $(payload "$sum") |"
    done
  done

  echo
  echo "| memory: function events per step (1 stream, 1 AD rank) | steps | peak RSS MB |"
  echo "|---|---|---|"
  for eps in 100000 250000 500000; do
    dir="$OUT/rss-$eps"
    rm -rf "$dir"
    "$BIN" synth scenarios/large.toml --engine BP5 --ranks 1 --steps 8 --events-per-step "$eps" --out "$dir" >/dev/null
    sum="$OUT/run-rss-$eps.json"
    "${MPIRUN[@]}" -np 1 "$BIN" run --quiet --input "$dir/tau-metrics-large-{rank}.bp" --summary-out "$sum" >/dev/null
    echo "| $eps | 8 | $(field "$sum" "round(d['peak_rss_mb'])") |"
    rm -rf "$dir"
  done
fi

if [ "$WHAT" = quality ] || [ "$WHAT" = all ]; then
  echo
  echo "| quality: data | algorithm | injected | TP | FP | FN | precision | recall | F1 |"
  echo "|---|---|---|---|---|---|---|---|---|"
  row() { # summary, data name, algorithm
    echo "| $2 | $3 | $(field "$1" "' | '.join(str(d['truth'][k]) for k in ('injected','true_positives','false_positives','false_negatives'))") | $(field "$1" "'%.4f | %.4f | %.4f' % (d['truth']['precision'], d['truth']['recall'], 2*d['truth']['precision']*d['truth']['recall']/max(d['truth']['precision']+d['truth']['recall'],1e-300))") |"
  }
  for scen in unimodal multimodal bursty demo large; do
    dir="$OUT/quality-$scen"
    rm -rf "$dir"
    "$BIN" synth "scenarios/$scen.toml" --out "$dir" >/dev/null
    for alg in "${ALGORITHMS[@]}"; do
      sum="$OUT/quality-$scen-$alg.json"
      "${MPIRUN[@]}" -np 2 "$BIN" run --quiet --algorithm "$alg" --input "$dir/tau-metrics-$scen-{rank}.bp" --truth "$dir/truth-$scen.csv" --summary-out "$sum" >/dev/null
      row "$sum" "$scen.toml" "$alg"
    done
  done
  fx=tests/fixtures/tau/simple_workflow
  for alg in "${ALGORITHMS[@]}"; do
    sum="$OUT/quality-tau-$alg.json"
    "${MPIRUN[@]}" -np 2 "$BIN" run --quiet --engine BP4 --algorithm "$alg" --input "$fx/tau-metrics-main1-{rank}.bp" --input "$fx/tau-metrics-main2-{rank}.bp" --truth "$fx/truth-main1.csv" --truth "$fx/truth-main2.csv" --summary-out "$sum" >/dev/null
    row "$sum" "real TAU fixture" "$alg"
  done
fi
