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
HERE="${SLURM_SUBMIT_DIR:-$PWD}/jobscripts"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"

conf="$TRACE_DIR/multi-prog.conf"
{
  echo "0-$((APP_RANKS - 1)) tau_exec -T mpi,pthread,adios2 -adios2_trace $*"
  echo "$APP_RANKS-$((APP_RANKS + AD_RANKS - 1)) $CHIMBUKO_BIN run"
} >"$conf"
# --export=ALL passes the TAU_* and CHIMBUKO_* settings to every task.
srun --export=ALL --ntasks=$((APP_RANKS + AD_RANKS)) --multi-prog "$conf"
