# Sourced by the scripts: puts cargo and the project venv in reach.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
export PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# mpirun refuses to run as root unless told; only say so when we are root.
MPIRUN_FLAGS=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then
  MPIRUN_FLAGS+=(--allow-run-as-root)
fi
export CHIMBUKO_MPIRUN_FLAGS="${MPIRUN_FLAGS[*]}"
