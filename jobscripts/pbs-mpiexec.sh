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
HERE="$PWD/jobscripts"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"
read -r -a app_args <<<"${APP_ARGS:-}"

mpiexec -n "$APP_RANKS" tau_exec -T mpi,pthread,adios2 -adios2_trace "./$APP_NAME" "${app_args[@]}" \
  : -n "$AD_RANKS" "$CHIMBUKO_BIN" run
