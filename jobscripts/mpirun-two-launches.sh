#!/usr/bin/env bash
# The application and the AD as two separate mpirun launches in the same
# allocation (or on one node), meeting through the stream files in
# TRACE_DIR. Each has its own MPI_COMM_WORLD: no constraint on the
# application.
#
#   APP_RANKS=4 AD_RANKS=1 APP_NAME=my_app bash jobscripts/mpirun-two-launches.sh ./my_app args...
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

APP_LAUNCH=(tau_exec -T "mpi,pthread,adios2" -adios2_trace "$@")
if [ -n "${APP_CMD:-}" ]; then
  read -r -a APP_LAUNCH <<<"$APP_CMD"
fi
read -r -a MPIRUN_FLAGS <<<"${MPIRUN_FLAGS:-}"

# The AD starts first and waits (CHIMBUKO_OPEN_TIMEOUT) for the streams.
# AD_CORES worker threads per AD rank; to bind each rank to that many
# cores, add `--map-by slot:PE=$AD_CORES` to MPIRUN_FLAGS.
mpirun "${MPIRUN_FLAGS[@]}" -np "$AD_RANKS" -x CHIMBUKO_THREADS="$AD_CORES" "$CHIMBUKO_BIN" run &
ad=$!
app_status=0
mpirun "${MPIRUN_FLAGS[@]}" -np "$APP_RANKS" "${APP_LAUNCH[@]}" || app_status=$?
ad_status=0
wait "$ad" || ad_status=$?
echo "provenance: $CHIMBUKO_OUT  (chimbuko-mpi inspect $CHIMBUKO_OUT)"
exit $((app_status != 0 ? app_status : ad_status))
