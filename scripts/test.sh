#!/usr/bin/env bash
# test.sh - the one test command: installs what is missing, builds, and runs every test
# tier this machine supports, ending with ctest's summary lines (one per tree).
#
#   unit, netns   in an ASan+UBSan build
#   vm            in the soft-RoCE lab (scripts/lab.sh), release build
#   mpi           mpirun on loopback, release build
#   gpu           runs where a CUDA device is present, skips elsewhere; release build
#   image         only when asked for (FABRIC_TEST_TIERS=image): the container image, release
#   fuzz          the libFuzzer targets, 60 s each (FABRIC_FUZZ_SECONDS), clang build
#
# Each tree builds only the programs of the tiers it runs (the fabric_tier_* targets of
# tests/CMakeLists.txt): on a 2-core machine the compiler is most of the run.
#
# A tier that should run here but did not (nothing in it passed: every test skipped, or
# none found) fails the run: netns needs root, vm needs root and /dev/net/tun. A single
# skipped test does not (a unit test that needs a GPU skips on a node without one, and
# the other way round). FABRIC_TEST_TIERS narrows the
# run for development, e.g. FABRIC_TEST_TIERS="unit netns".
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

log() { printf 'test.sh: %s\n' "$*" >&2; }

"$REPO/scripts/setup.sh"

# Tiers this machine must run; a tier missing from here is allowed to skip.
required_tiers() {
  local tiers=(unit mpi)
  if ((EUID == 0)); then
    tiers+=(netns)
    [[ -c /dev/net/tun ]] && tiers+=(vm)
  fi
  echo "${tiers[*]}"
}

SELECTED=${FABRIC_TEST_TIERS:-unit netns vm mpi gpu fuzz}
REQUIRED=
for tier in $(required_tiers); do
  [[ " $SELECTED " == *" $tier "* ]] && REQUIRED+="${REQUIRED:+ }$tier"
done
label_regex() { local t; local out=; for t in "$@"; do out+="${out:+|}^$t\$"; done; echo "$out"; }

ctest_args=(--output-on-failure --no-tests=error)

# Every ctest run appends its progress lines here; check_tiers_ran reads them all.
RESULTS=${FABRIC_BUILD_ROOT:-$REPO/build}/tiers.log

# Builds the programs of the given tiers in one tree and runs those tiers' tests there.
#   run_tiers FLAVOUR TIER...
run_tiers() {
  local flavour=$1 dir status=0
  shift
  log "building the $flavour tree for: $*"
  # Called in a condition, where errexit does not apply: every failure is checked here.
  dir=$("$REPO/scripts/build.sh" "$flavour" "${@/#/fabric_tier_}") ||
    { log "the $flavour build failed: $* not run"; return 1; }
  log "running $* ($flavour)"
  # The sanitized tree runs its tests two at a time; the release tree's lab VMs one by one.
  local jobs=1
  [[ $flavour == asan ]] && jobs=$(nproc)
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$dir" "${ctest_args[@]}" -j "$jobs" -L "$(label_regex "$@")" 2>&1 |
    tee -a "$RESULTS" || status=$?
  return $status
}

# The selected tiers among the given ones, in that order.
selected_of() {
  local t out=()
  for t in "$@"; do [[ " $SELECTED " == *" $t "* ]] && out+=("$t"); done
  echo "${out[*]}"
}

# shellcheck source=scripts/lib/tiers.sh
source "$REPO/scripts/lib/tiers.sh"

# The libFuzzer targets (tests/fuzz), each for FABRIC_FUZZ_SECONDS (default 60) from its
# seed corpus, in a clang tree of their own: a crash or a leak fails the run.
# FUZZ_OUTCOME says how it went, repeated at the end of the run where CI's tail shows it.
FUZZ_OUTCOME=
run_fuzz() {
  [[ " $SELECTED " == *" fuzz "* ]] || return 0
  local seconds=${FABRIC_FUZZ_SECONDS:-60} dir
  log "building the fuzz targets (clang, ASan+UBSan)"
  dir=$("$REPO/scripts/build.sh" fuzz cni_config_fuzz agent_frames_fuzz nccl_profile_fuzz) ||
    { FUZZ_OUTCOME="the fuzz build failed"; log "$FUZZ_OUTCOME"; return 1; }
  local target seeds corpus
  for target in cni_config_fuzz:tests/data/cni/corpus agent_frames_fuzz:tests/data/probe/agent_corpus \
    nccl_profile_fuzz:tests/data/nccl_profiler/corpus; do
    seeds=$REPO/${target#*:} target=${target%%:*}
    corpus=$(mktemp -d)
    log "fuzzing $target for $seconds s"
    if ! "$dir/tests/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$dir/$target-" "$corpus" "$seeds" 2>"$dir/$target.log"; then
      tail -n 40 "$dir/$target.log" >&2
      FUZZ_OUTCOME="fuzzing $target found a failure (input saved as $dir/$target-*)"
      log "$FUZZ_OUTCOME"
      # A clean clone's tree is gone after the run: the input, small, travels in the log.
      local found
      for found in "$dir/$target"-*; do
        [[ -f $found && $(stat -c %s "$found") -le 4096 ]] &&
          FUZZ_OUTCOME+=$'\n'"test.sh: $(basename "$found") as base64: $(base64 -w0 "$found")"
      done
      rm -rf "$corpus"
      return 1
    fi
    grep -E 'stat::number_of_executed_units' "$dir/$target.log" | sed "s/^/test.sh: $target /" >&2
    rm -rf "$corpus"
  done
  FUZZ_OUTCOME="fuzz: every target ran ${seconds} s clean"
}

main() {
  local status=0 tiers
  mkdir -p "$(dirname "$RESULTS")"
  : >"$RESULTS"
  tiers=$(selected_of unit netns)
  # shellcheck disable=SC2086 # tier names are words
  [[ -z $tiers ]] || run_tiers asan $tiers || status=$?
  run_fuzz || status=$?
  tiers=$(selected_of vm mpi gpu image)
  # shellcheck disable=SC2086
  [[ -z $tiers ]] || run_tiers release $tiers || status=$?
  [[ -s $RESULTS ]] || return $status

  log "tiers selected: $SELECTED (required here: $REQUIRED)"
  check_tiers_ran "$RESULTS" || status=1
  [[ -z $FUZZ_OUTCOME ]] || log "$FUZZ_OUTCOME"
  # The last lines stay ctest's own summaries (one per tree), for people and CI alike.
  grep -E '^[0-9]+% tests passed' "$RESULTS" || true
  return $status
}

main "$@"
