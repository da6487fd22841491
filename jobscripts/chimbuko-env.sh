# shellcheck shell=bash
# Settings shared by the launch recipes in this directory. Source it after
# setting (or to take the defaults of) the variables below; every recipe
# does. The AD is configured entirely through CHIMBUKO_* variables, so the
# AD command line in the recipes is just `chimbuko-mpi run`.
#
# Change these for your job:
APP_NAME="${APP_NAME:-my_app}"          # binary name: TAU names streams <prefix>-<APP_NAME>-<rank>.bp
APP_RANKS="${APP_RANKS:-4}"             # application ranks (one stream each)
AD_RANKS="${AD_RANKS:-1}"               # AD ranks (at most APP_RANKS); ~1 per 8-16 app ranks is typical
AD_CORES="${AD_CORES:-2}"               # cores per AD rank: its worker threads (one per core it is bound to)
TRACE_DIR="${TRACE_DIR:-$PWD/chimbuko-trace}"  # where TAU's streams (SST contact files or BP files) go
ENGINE="${ENGINE:-SST}"                 # SST (in situ) or BP4/BP5 (files, read while written)
# CHIMBUKO_BIN: the chimbuko-mpi binary. Default: chimbuko-mpi on PATH, else
# the one installed beside these scripts (PREFIX/bin for
# PREFIX/share/chimbuko-mpi/jobscripts), else this repository's release
# build (target/release, `cargo build --release`).

# --- TAU side (the application) -------------------------------------------
# tau_exec -T mpi,pthread,adios2 -adios2_trace loads TAU's ADIOS2 trace
# plugin; without tau_exec, point TAU_PLUGINS at it instead.
export TAU_ADIOS2_ENGINE="$ENGINE"
export TAU_ADIOS2_FILENAME="$TRACE_DIR/tau-metrics"   # prefix of the stream names
export TAU_ADIOS2_PERIODIC=1                           # one ADIOS2 step per period
export TAU_ADIOS2_PERIOD="${TAU_ADIOS2_PERIOD:-1000000}"  # µs between steps (1 s)
export TAU_ADIOS2_ONE_FILE=FALSE                       # one stream per rank
export TAU_THROTTLE=0                                  # keep every call (the AD decides)
export TAU_THREAD_PER_GPU_STREAM=1
# export TAU_PLUGINS_PATH=$TAU_ROOT/x86_64/lib/shared-mpi-pthread-adios2
# export TAU_PLUGINS=libTAU-adios2-trace-plugin.so

# --- AD side (chimbuko-mpi run) -------------------------------------------
export CHIMBUKO_ENGINE="$ENGINE"
export CHIMBUKO_BINARY="$APP_NAME"
export CHIMBUKO_TRACE_DIR="$TRACE_DIR"
export CHIMBUKO_APP_RANKS="$APP_RANKS"
export CHIMBUKO_OUT="${CHIMBUKO_OUT:-$PWD/chimbuko-$APP_NAME.h5}"   # provenance (HDF5)
export CHIMBUKO_OVERWRITE="${CHIMBUKO_OVERWRITE:-false}"
export CHIMBUKO_OPEN_TIMEOUT="${CHIMBUKO_OPEN_TIMEOUT:-300}"   # s to wait for the application's streams
# Detector and provenance knobs (see `chimbuko-mpi run --help`), e.g.:
# export CHIMBUKO_ALGORITHM=sstd CHIMBUKO_SIGMA=6 CHIMBUKO_WINDOW=5
# export CHIMBUKO_STATS_OUT=$PWD/chimbuko-stats.jsonl CHIMBUKO_VIZ_URL=http://vizhost:5002/api

# --- where things are -------------------------------------------------------
if [ -z "${CHIMBUKO_BIN:-}" ]; then
  chimbuko_prefix="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/bin"
  chimbuko_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release"
  for CHIMBUKO_BIN in "$(command -v chimbuko-mpi || true)" \
    "$chimbuko_prefix/chimbuko-mpi" "$chimbuko_repo/chimbuko-mpi" ""; do
    if [ -n "$CHIMBUKO_BIN" ] && [ -x "$CHIMBUKO_BIN" ]; then break; fi
  done
  if [ -z "$CHIMBUKO_BIN" ]; then
    echo "chimbuko-env.sh: no chimbuko-mpi on PATH, in $chimbuko_prefix or in $chimbuko_repo;" \
      "set CHIMBUKO_BIN to the binary" >&2
    return 1
  fi
fi
# The recipes' own variable (where this file is) is not an AD setting:
# keep it out of the AD's environment.
export -n CHIMBUKO_JOBSCRIPTS 2>/dev/null || true

mkdir -p "$TRACE_DIR"
