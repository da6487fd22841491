#!/usr/bin/env bash
# One command: install what is missing, build, and run every test
# (format, lints, Rust unit + integration tests incl. mpirun runs, Python tests).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# shellcheck disable=SC1091
. scripts/env.sh
# Single-node tests need no Omni-Path or libfabric transport; without this,
# Open MPI builds that include them (Debian's) probe for the hardware in
# every process's MPI_Init (0.2-0.3 s each; jobscripts/README.md,
# "Start-up time"). On such a machine ob1 is what the probe ends up with.
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"

echo "[test] cargo fmt --check"
cargo fmt --all -- --check
echo "[test] shellcheck (job scripts and our scripts)"
shellcheck -x jobscripts/*.sh scripts/*.sh
echo "[test] cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
echo "[test] cargo test"
cargo test --workspace --all-features --quiet 2>&1
echo "[test] Python tests (independent readers: adios2, h5py)"
cargo build --quiet
"$PYTHON" -m pytest -q tests/python
echo "[test] benchmark smoke test (small sizes; detection quality bars, no timing)"
bash scripts/bench.sh --quick
echo "[test] all tests passed"
