#!/usr/bin/env bash
#SBATCH --job-name=app+chimbuko
#SBATCH --nodes=2
#SBATCH --ntasks=36            # APP_RANKS + AD_RANKS
#SBATCH --time=01:00:00
# Slurm MPMD in one MPI_COMM_WORLD with `srun --multi-prog`: tasks
# 0..APP_RANKS-1 run the application, the rest the AD. The application
# must split MPI_COMM_WORLD by MPI_APPNUM (see mpirun-mpmd.sh). Submit with
#   APP_RANKS=32 AD_RANKS=4 APP_NAME=my_app sbatch jobscripts/slurm-multi-prog.sh ./my_app args...
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

conf="$TRACE_DIR/multi-prog.conf"
{
  echo "0-$((APP_RANKS - 1)) tau_exec -T mpi,pthread,adios2 -adios2_trace $*"
  echo "$APP_RANKS-$((APP_RANKS + AD_RANKS - 1)) $CHIMBUKO_BIN run"
} >"$conf"
# --export=ALL passes the TAU_* and CHIMBUKO_* settings to every task.
# One CPU per task for the application; the AD ranks' threads share
# theirs (srun --multi-prog gives every task the same --cpus-per-task:
# for AD_CORES cores per AD rank use slurm-hetjob.sh).
srun --export=ALL --ntasks=$((APP_RANKS + AD_RANKS)) --multi-prog "$conf"
