#!/usr/bin/env bash
# The fast test tier, for day-to-day work: format, lints, the unit tests and
# the integration tests that need no mpirun (no multi-rank runs, no SST, no
# Python readers, no benchmark). About two minutes once built. CI runs the
# full suite, scripts/test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
. scripts/env.sh

echo "[test-fast] cargo fmt --check"
cargo fmt --all -- --check
echo "[test-fast] cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
echo "[test-fast] unit tests and single-process integration tests"
cargo test --workspace --all-features --quiet --lib --bins \
  --test architecture --test events_callstack --test exact_properties \
  --test fuzz_regressions --test ross_analysis --test ross_detection --test ross_reader --test ross_reader_modes --test synth_ross --test trace_bad_input --test trace_real_tau \
  --test trace_roundtrip 2>&1
echo "[test-fast] passed (the full suite is scripts/test.sh)"
