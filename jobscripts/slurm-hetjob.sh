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
HERE="${SLURM_SUBMIT_DIR:-$PWD}/jobscripts"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"

srun --export=ALL --het-group=0 --ntasks="$APP_RANKS" tau_exec -T mpi,pthread,adios2 -adios2_trace "$@" \
  : --het-group=1 --ntasks="$AD_RANKS" "$CHIMBUKO_BIN" run
