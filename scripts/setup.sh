#!/usr/bin/env bash
# Installs everything chimbuko-mpi needs to build, run and test, idempotently.
#   - Debian packages: OpenMPI, parallel HDF5 (openmpi flavour), libclang, cmake, pkg-config,
#     patchelf (scripts/install.sh), Chromium and its WebDriver (the browser tests of
#     `chimbuko-mpi report`)
#   - a project-local Python venv (.venv) with the `adios2` wheel (it ships the
#     ADIOS2 C library and headers we link against), h5py, numpy, pytest and selenium
#   - the project's Python package (python/, `import chimbuko_mpi`) in that venv
# Works as root, or as a normal user with sudo. Safe to run again.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CHIMBUKO_VENV:-$ROOT/.venv}"

APT_PACKAGES=(
  build-essential pkg-config cmake curl ca-certificates
  openmpi-bin libopenmpi-dev
  libhdf5-openmpi-dev hdf5-tools
  liblapack-dev
  libclang-dev clang
  python3 python3-venv python3-pip
  shellcheck fonts-dejavu-core
  patchelf
  chromium chromium-driver
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
  local p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

install_apt() {
  local missing
  missing="$(missing_packages)"
  if [ -z "$missing" ]; then
    echo "[setup] Debian packages: all present"
    return
  fi
  echo "[setup] installing Debian packages: $(echo "$missing" | tr '\n' ' ')"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

install_rust() {
  # Debian's rustc is too old; use rustup's stable toolchain (user-local).
  if [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  if command -v cargo >/dev/null 2>&1; then
    echo "[setup] Rust: $(cargo --version)"
  else
    echo "[setup] installing Rust stable with rustup into ~/.cargo"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
      sh -s -- -y --profile minimal --default-toolchain stable --component rustfmt,clippy >/dev/null
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  if command -v rustup >/dev/null 2>&1; then
    for c in rustfmt clippy; do
      rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c" >/dev/null 2>&1 || true
    done
  fi
}

install_venv() {
  local py="${PYTHON:-python3}"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating Python venv at $VENV"
    "$py" -m venv "$VENV"
  fi
  if "$VENV/bin/python" -c "import adios2, h5py, numpy, pytest, pandas, jsonschema, selenium" 2>/dev/null; then
    echo "[setup] Python venv: adios2 $("$VENV/bin/python" -c 'import adios2; print(adios2.__version__)'), h5py, numpy, pytest, selenium present"
    return
  fi
  echo "[setup] installing Python packages into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$ROOT/scripts/requirements.txt"
}

install_python_package() {
  # python/ (the provenance reader), reinstalled when its files change: the
  # venv keeps the checksum of the installed sources.
  local stamp="$VENV/.chimbuko-mpi-python.sha256" sum
  sum="$(cd "$ROOT/python" &&
    find . \( -name build -o -name dist -o -name '*.egg-info' -o -name __pycache__ \) -prune \
      -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] &&
    "$VENV/bin/python" -c "import chimbuko_mpi" 2>/dev/null; then
    echo "[setup] Python package chimbuko-mpi (python/): installed"
    return
  fi
  echo "[setup] installing the Python package chimbuko-mpi (python/) into $VENV"
  "$VENV/bin/python" -m pip install -q "$ROOT/python"
  echo "$sum" >"$stamp"
}

install_apt
install_rust
install_venv
install_python_package
echo "[setup] done"
