#!/usr/bin/env bash
# Coverage-guided fuzzing of the bad-input paths (libFuzzer via cargo-fuzz,
# stable toolchain): the `steps` target feeds arbitrary bytes, decoded as a
# TAU stream of several steps, through the reader's validation and the
# call-stack replay; `parse` feeds arbitrary text to the attribute, stream
# name and event id parsers. See docs/reliability.md.
#
# usage: scripts/fuzz.sh [seconds] [target...]
#   seconds  total budget, split over the targets (default 300; `steps`
#            gets four fifths when both run)
#   target   steps and/or parse (default both)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). The targets are built
# without a sanitizer (`--sanitizer none`), which needs no nightly
# toolchain; the code under test is safe Rust, so panics, overflow checks,
# debug assertions and the harness's invariants are what find bugs.
# With FUZZ_SANITIZER=address the build uses ASan instead (stable rustc
# accepts -Zsanitizer only with RUSTC_BOOTSTRAP=1, which this then sets).
#
# The working corpus grows in fuzz/corpus/<target> (not committed), seeded
# from fuzz/seeds/<target>. A crash is written to fuzz/artifacts/<target>/;
# keep it as tests/fuzz-regressions/<target>/<name> so that
# tests/fuzz_regressions.rs replays it in every test run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck disable=SC1091
. scripts/env.sh
cd fuzz

budget="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(steps parse)

sanitizer="${FUZZ_SANITIZER:-none}"
if [ "$sanitizer" != none ]; then
  export RUSTC_BOOTSTRAP=1
fi
build=(--sanitizer "$sanitizer" -O)

cargo fuzz build "${build[@]}" # all targets

status=0
for t in "${targets[@]}"; do
  if [ ${#targets[@]} -eq 1 ]; then
    secs="$budget"
  elif [ "$t" = steps ]; then
    secs=$((budget * 4 / 5))
  else
    secs=$((budget - budget * 4 / 5))
  fi
  mkdir -p "corpus/$t"
  echo "== fuzzing $t for ${secs}s"
  # -timeout: one input may take at most 10 s (a hang is a finding);
  # -rss_limit_mb: more than 2 GB for one input is a finding too.
  if ! cargo fuzz run "${build[@]}" "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1; then
    echo "fuzz: $t found a failing input; see fuzz/artifacts/$t/" >&2
    status=1
  fi
done
exit "$status"
