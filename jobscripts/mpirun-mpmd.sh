#!/usr/bin/env bash
# The application and the AD in ONE mpirun (MPMD, one MPI_COMM_WORLD).
#
#   APP_RANKS=4 AD_RANKS=1 APP_NAME=my_app bash jobscripts/mpirun-mpmd.sh ./my_app args...
#
# The application must come first (TAU names its streams by world rank) and
# must not use MPI_COMM_WORLD for its own collectives: in an MPMD launch it
# should call MPI_Comm_split(MPI_COMM_WORLD, appnum, rank, &comm) with its
# MPI_APPNUM and use `comm` — the AD does the same and never communicates on
# MPI_COMM_WORLD. Applications that cannot do that use the two-launch
# recipe (mpirun-two-launches.sh) instead.
set -euo pipefail
# >>> find chimbuko-env.sh (the same lines in every recipe; jobscripts/README.md):
# $CHIMBUKO_JOBSCRIPTS if set; else this script's directory (a batch system runs
# a copy of the script elsewhere), PREFIX/share/chimbuko-mpi/jobscripts for the
# chimbuko-mpi on PATH (PREFIX/bin), the submission directory's jobscripts/.
chimbuko_jobscripts() {
  local self="${BASH_SOURCE[0]:-}" bin d
  set -- "${CHIMBUKO_JOBSCRIPTS:-}"
  if [ -z "$1" ]; then
    set --
    if [ -f "$self" ]; then set -- "$(dirname -- "$(readlink -f -- "$self")")"; fi
    if bin="$(command -v "${CHIMBUKO_BIN:-chimbuko-mpi}")"; then
      set -- "$@" "$(dirname -- "$bin")/../share/chimbuko-mpi/jobscripts" \
        "$(dirname -- "$(readlink -f -- "$bin")")/../share/chimbuko-mpi/jobscripts"
    fi
    set -- "$@" "${SLURM_SUBMIT_DIR:-${LS_SUBCWD:-${PBS_O_WORKDIR:-$PWD}}}/jobscripts"
  fi
  for d; do [ -f "$d/chimbuko-env.sh" ] && { cd -- "$d" && pwd; return; }; done
  printf 'chimbuko job script: no chimbuko-env.sh in %s\n' "$@" >&2
  echo 'chimbuko job script: set CHIMBUKO_JOBSCRIPTS to the jobscripts directory' >&2
  return 1
}
HERE="$(chimbuko_jobscripts)"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"
# <<< find chimbuko-env.sh

# How the application is started: TAU's tau_exec in front of the binary.
APP_LAUNCH=(tau_exec -T "mpi,pthread,adios2" -adios2_trace "$@")
if [ -n "${APP_CMD:-}" ]; then
  read -r -a APP_LAUNCH <<<"$APP_CMD"   # override, e.g. for tests
fi
read -r -a MPIRUN_FLAGS <<<"${MPIRUN_FLAGS:-}"   # e.g. --oversubscribe --bind-to none

# AD_CORES worker threads per AD rank (one mapping serves both programs
# of an MPMD launch, so the count is given, not taken from the binding).
mpirun "${MPIRUN_FLAGS[@]}" \
  -np "$APP_RANKS" "${APP_LAUNCH[@]}" \
  : -np "$AD_RANKS" -x CHIMBUKO_THREADS="$AD_CORES" "$CHIMBUKO_BIN" run
echo "provenance: $CHIMBUKO_OUT  (chimbuko-mpi inspect $CHIMBUKO_OUT)"
