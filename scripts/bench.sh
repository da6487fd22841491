#!/usr/bin/env bash
# Benchmarks and detection quality: builds the release binaries and runs the
# chimbuko-bench harness (bench/), which writes docs/benchmarks.md and the
# plots in docs/img/.
#   scripts/bench.sh                      # everything (~10 min on 2 cores)
#   scripts/bench.sh --only quality       # one section (repeatable)
#   scripts/bench.sh --quick              # small sizes, quality bars checked
#                                         # (CI); writes out/bench-quick/
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh >/dev/null
# shellcheck disable=SC1091
. scripts/env.sh
cargo build --release --quiet -p chimbuko-mpi -p chimbuko-bench
ARGS=(--bin target/release/chimbuko-mpi)
case " $* " in
  *" --quick "*) ARGS+=(--work out/bench-quick --docs out/bench-quick) ;;
  *) ARGS+=(--work out/bench --docs docs) ;;
esac
mkdir -p out/bench out/bench-quick
exec target/release/chimbuko-bench "${ARGS[@]}" "$@"
