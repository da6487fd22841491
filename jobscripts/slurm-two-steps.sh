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
HERE="${SLURM_SUBMIT_DIR:-$PWD}/jobscripts"
# shellcheck source=jobscripts/chimbuko-env.sh
. "$HERE/chimbuko-env.sh"

srun --export=ALL --nodes=1 --ntasks="$AD_RANKS" --exclusive "$CHIMBUKO_BIN" run &
ad=$!
srun --export=ALL --nodes=$((SLURM_JOB_NUM_NODES - 1)) --ntasks="$APP_RANKS" --exclusive \
  tau_exec -T mpi,pthread,adios2 -adios2_trace "$@"
wait "$ad"
