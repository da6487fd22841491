#!/usr/bin/env bash
# Benchmarks: TAU reader throughput and synth write throughput.
# Prints a Markdown table to paste into docs/benchmarks.md.
#   scripts/bench.sh [reader|synth|run|all]   (default: all)
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

if [ "$WHAT" = run ] || [ "$WHAT" = all ]; then
  read -r -a MPIRUN <<<"mpirun $CHIMBUKO_MPIRUN_FLAGS"
  field() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
  data="$OUT/large-BP5"
  [ -d "$data/tau-metrics-large-0.bp" ] || "$BIN" synth scenarios/large.toml --engine BP5 --out "$data" >/dev/null
  echo
  echo "| run: large.toml | AD ranks | function events | seconds | M function events/s per AD rank | ms/step read | agree | build | summarize | reduce | label | status | peak RSS MB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for np in 1 2; do
    sum="$OUT/run-large-$np.json"
    "${MPIRUN[@]}" -np "$np" "$BIN" run --quiet --input "$data/tau-metrics-large-{rank}.bp" --summary-out "$sum" >/dev/null
    fe=$(field "$sum" "sum(f['executions'] for f in d['functions'])*2")
    echo "| | $np | $fe | $(field "$sum" "round(d['seconds'],3)") | $(field "$sum" "round($fe/d['seconds']/1e6/$np,2)") | $(field "$sum" "' | '.join('%.2f' % (t*1e3/d['steps']) for n,t in d['timings'])") | $(field "$sum" "round(d['peak_rss_mb'])") |"
  done

  echo
  echo "| collectives: functions | AD ranks | ms/step agree | reduce | status | total |"
  echo "|---|---|---|---|---|---|"
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
    sum="$OUT/run-functions-$nf.json"
    "${MPIRUN[@]}" -np 2 "$BIN" run --quiet --input "$dir/tau-metrics-fn$nf-{rank}.bp" --summary-out "$sum" >/dev/null
    echo "| $nf | 2 | $(field "$sum" "' | '.join('%.3f' % (dict(d['timings'])[k]*1e3/d['steps']) for k in ('agree','reduce','status'))") | $(field "$sum" "'%.3f' % (sum(dict(d['timings'])[k] for k in ('agree','reduce','status'))*1e3/d['steps'])") |"
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
