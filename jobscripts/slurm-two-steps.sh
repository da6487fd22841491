#!/usr/bin/env bash
#SBATCH --job-name=app+chimbuko
#SBATCH --nodes=3
#SBATCH --time=01:00:00
# Two job steps in one allocation: the AD on its own node(s), the
# application on the others; each has its own MPI_COMM_WORLD (no constraint
# on the application). They meet through the stream files in TRACE_DIR
# (a shared file system for SST contact files and BP files).
#   APP_RANKS=32 AD_RANKS=4 APP_NAME=my_app sbatch jobscripts/slurm-two-steps.sh ./my_app args...
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

srun --export=ALL --nodes=1 --ntasks="$AD_RANKS" --cpus-per-task="$AD_CORES" --exclusive "$CHIMBUKO_BIN" run &
ad=$!
srun --export=ALL --nodes=$((SLURM_JOB_NUM_NODES - 1)) --ntasks="$APP_RANKS" --exclusive \
  tau_exec -T mpi,pthread,adios2 -adios2_trace "$@"
wait "$ad"
