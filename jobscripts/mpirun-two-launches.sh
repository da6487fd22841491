#!/usr/bin/env bash
# The application and the AD as two separate mpirun launches in the same
# allocation (or on one node), meeting through the stream files in
# TRACE_DIR. Each has its own MPI_COMM_WORLD: no constraint on the
# application.
#
#   APP_RANKS=4 AD_RANKS=1 APP_NAME=my_app bash jobscripts/mpirun-two-launches.sh ./my_app args...
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"

APP_LAUNCH=(tau_exec -T "mpi,pthread,adios2" -adios2_trace "$@")
if [ -n "${APP_CMD:-}" ]; then
  read -r -a APP_LAUNCH <<<"$APP_CMD"
fi
read -r -a MPIRUN_FLAGS <<<"${MPIRUN_FLAGS:-}"

# The AD starts first and waits (CHIMBUKO_OPEN_TIMEOUT) for the streams.
mpirun "${MPIRUN_FLAGS[@]}" -np "$AD_RANKS" "$CHIMBUKO_BIN" run &
ad=$!
app_status=0
mpirun "${MPIRUN_FLAGS[@]}" -np "$APP_RANKS" "${APP_LAUNCH[@]}" || app_status=$?
ad_status=0
wait "$ad" || ad_status=$?
echo "provenance: $CHIMBUKO_OUT  (chimbuko-mpi inspect $CHIMBUKO_OUT)"
exit $((app_status != 0 ? app_status : ad_status))
