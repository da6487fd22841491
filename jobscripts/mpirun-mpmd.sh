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
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"

# How the application is started: TAU's tau_exec in front of the binary.
APP_LAUNCH=(tau_exec -T "mpi,pthread,adios2" -adios2_trace "$@")
if [ -n "${APP_CMD:-}" ]; then
  read -r -a APP_LAUNCH <<<"$APP_CMD"   # override, e.g. for tests
fi
read -r -a MPIRUN_FLAGS <<<"${MPIRUN_FLAGS:-}"   # e.g. --oversubscribe --bind-to none

mpirun "${MPIRUN_FLAGS[@]}" \
  -np "$APP_RANKS" "${APP_LAUNCH[@]}" \
  : -np "$AD_RANKS" "$CHIMBUKO_BIN" run
echo "provenance: $CHIMBUKO_OUT  (chimbuko-mpi inspect $CHIMBUKO_OUT)"
