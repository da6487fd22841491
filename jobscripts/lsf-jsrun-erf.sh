#!/usr/bin/env bash
#BSUB -J app+chimbuko
#BSUB -nnodes 2
#BSUB -W 60
# LSF/jsrun (Summit-like): the application and the AD in one
# MPI_COMM_WORLD through an explicit resource file (ERF); the application
# must split by MPI_APPNUM (see mpirun-mpmd.sh). Ranks 0..APP_RANKS-1 run
# the application. Submit with
#   APP_RANKS=32 AD_RANKS=2 APP_NAME=my_app bsub jobscripts/lsf-jsrun-erf.sh ./my_app args...
# Alternative without the MPMD constraint: two concurrent launches,
#   jsrun -n "$AD_RANKS" -a1 -c"$AD_CORES" "$CHIMBUKO_BIN" run &  jsrun -n "$APP_RANKS" ... ; wait
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

erf="$TRACE_DIR/app+chimbuko.erf"
{
  echo "app 0: tau_exec -T mpi,pthread,adios2 -adios2_trace $*"
  echo "app 1: $CHIMBUKO_BIN run"
  echo "overlapping_rs: allow"
  echo "cpu_index_using: logical"
  # Application: 16 ranks per node on the first node(s), one core each.
  for ((r = 0; r < APP_RANKS; r++)); do
    echo "rank: $r: { host: $((1 + r / 16)); cpu: {$((r % 16))} } : app 0"
  done
  # AD: on the last host, cores after the application's.
  for ((r = 0; r < AD_RANKS; r++)); do
    first=$((16 + r * AD_CORES))
    echo "rank: $((APP_RANKS + r)): { host: $((1 + (APP_RANKS - 1) / 16)); cpu: {$first-$((first + AD_CORES - 1))} } : app 1"
  done
} >"$erf"
jsrun --erf_input "$erf"
