#!/usr/bin/env bash
# test.sh - the one test command: installs what is missing, builds, and runs every test
# tier this machine supports, ending with ctest's summary line.
#
#   unit, netns   in an ASan+UBSan build, then again in the release build
#   vm            in the soft-RoCE lab (scripts/lab.sh), release build
#   mpi           mpirun on loopback
#   gpu           runs where a CUDA device is present, skips elsewhere
#
# A tier that should run here but did not (every test skipped, or none found) fails the
# run: netns needs root, vm needs root and /dev/net/tun. FABRIC_TEST_TIERS narrows the
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

SELECTED=${FABRIC_TEST_TIERS:-unit netns vm mpi gpu}
REQUIRED=
for tier in $(required_tiers); do
  [[ " $SELECTED " == *" $tier "* ]] && REQUIRED+="${REQUIRED:+ }$tier"
done
label_regex() { local t; local out=; for t in "$@"; do out+="${out:+|}^$t\$"; done; echo "$out"; }

ctest_args=(--output-on-failure --no-tests=error)

run_sanitized_tiers() {
  local tiers=() t
  for t in unit netns; do [[ " $SELECTED " == *" $t "* ]] && tiers+=("$t"); done
  ((${#tiers[@]})) || return 0
  log "building the ASan+UBSan tree"
  local dir
  dir=$("$REPO/scripts/build.sh" asan)
  log "running ${tiers[*]} under ASan+UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$dir" "${ctest_args[@]}" -j "$(nproc)" -L "$(label_regex "${tiers[@]}")"
}

# Counts passed/skipped/failed per tier from ctest's progress lines
# ("12/63 Test #12: unit.Json.Parse ....   Passed    0.01 sec").
check_tiers_ran() {
  local results=$1 ok=0 t passed skipped failed
  for t in $SELECTED; do
    read -r passed skipped failed < <(awk -v tier="$t" '
      / Test +#[0-9]+: / {
        name = $0; sub(/.*Test +#[0-9]+: /, "", name); split(name, parts, ".")
        if (parts[1] != tier) next
        if ($0 ~ /\*\*\*Skipped/ || $0 ~ /Not Run/) s++
        else if ($0 ~ / Passed /) p++
        else f++
      }
      END { printf "%d %d %d\n", p, s, f }' "$results")
    log "tier $t: $passed passed, $skipped skipped, $failed failed"
    if [[ " $REQUIRED " == *" $t "* ]] && ((passed == 0 || skipped > 0)); then
      log "tier $t should run on this machine but did not run completely"
      ok=1
    fi
  done
  return $ok
}

main() {
  run_sanitized_tiers

  log "building the release tree"
  local dir
  dir=$("$REPO/scripts/build.sh" release)
  local results=$dir/Testing/tiers.log
  mkdir -p "$(dirname "$results")"
  log "running tiers: $SELECTED (required here: $REQUIRED)"
  local status=0
  # shellcheck disable=SC2086 # tier names are words
  ctest --test-dir "$dir" "${ctest_args[@]}" -L "$(label_regex $SELECTED)" 2>&1 |
    tee "$results" || status=$?
  check_tiers_ran "$results" || status=1
  # The last line stays ctest's own summary, for people and CI alike.
  grep -E '^[0-9]+% tests passed' "$results" | tail -n 1 || true
  return $status
}

main "$@"
