#!/usr/bin/env bash
# The fast test tier, for day-to-day work: format, lints, the unit tests and
# every integration test that needs no mpirun. The tier follows from the
# file names: a test file that launches mpirun ends in `_mpi.rs`
# (tests/architecture.rs checks it), so every other file runs here. About
# two minutes once built. CI runs the full suite, scripts/test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
. scripts/env.sh
# As in scripts/test.sh: no probing for Omni-Path or libfabric hardware in
# each process's MPI_Init.
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"

echo "[test-fast] cargo fmt --check"
cargo fmt --all -- --check
echo "[test-fast] cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
TESTS=()
for f in tests/*.rs; do
  name="$(basename "$f" .rs)"
  case "$name" in
    *_mpi) ;;
    *) TESTS+=(--test "$name") ;;
  esac
done
echo "[test-fast] unit tests and single-process integration tests ($((${#TESTS[@]} / 2)) files)"
cargo test --workspace --all-features --quiet --lib --bins "${TESTS[@]}" 2>&1
echo "[test-fast] passed (the full suite is scripts/test.sh)"
