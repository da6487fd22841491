#!/usr/bin/env bash
#SBATCH --job-name=app+chimbuko
#SBATCH --time=01:00:00
#SBATCH --nodes=2 --ntasks-per-node=16
#SBATCH hetjob
#SBATCH --nodes=1 --ntasks-per-node=4
# Slurm heterogeneous job: component 0 runs the application, component 1
# the AD, launched together (one MPI_COMM_WORLD with MPI_APPNUM 0 and 1 on
# most MPIs; the application must split by MPI_APPNUM, see mpirun-mpmd.sh).
#   APP_RANKS=32 AD_RANKS=4 APP_NAME=my_app sbatch jobscripts/slurm-hetjob.sh ./my_app args...
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

srun --export=ALL --het-group=0 --ntasks="$APP_RANKS" tau_exec -T mpi,pthread,adios2 -adios2_trace "$@" \
  : --het-group=1 --ntasks="$AD_RANKS" --cpus-per-task="$AD_CORES" "$CHIMBUKO_BIN" run
