#!/usr/bin/env bash
#PBS -N app+chimbuko
#PBS -l select=2:ncpus=32:mpiprocs=32
#PBS -l walltime=01:00:00
# PBS Pro / Torque with mpiexec (MPICH, Cray PALS, Open MPI): MPMD in one
# MPI_COMM_WORLD; the application must split by MPI_APPNUM (see
# mpirun-mpmd.sh). Submit with
#   qsub -v APP_RANKS=48,AD_RANKS=4,APP_NAME=my_app,APP_ARGS="..." jobscripts/pbs-mpiexec.sh
set -euo pipefail
cd "${PBS_O_WORKDIR:-$PWD}"
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
read -r -a app_args <<<"${APP_ARGS:-}"

mpiexec -n "$APP_RANKS" tau_exec -T mpi,pthread,adios2 -adios2_trace "./$APP_NAME" "${app_args[@]}" \
  : -n "$AD_RANKS" -env CHIMBUKO_THREADS "$AD_CORES" "$CHIMBUKO_BIN" run
