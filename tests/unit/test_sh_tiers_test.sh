#!/usr/bin/env bash
# scripts/lib/tiers.sh, the check at the end of scripts/test.sh, over ctest progress lines:
# a required tier with a skipping test passes (a GPU node skips the no-GPU tests and the
# other way round); one where every test skipped, or none ran, fails the run.
#   test_sh_tiers_test.sh REPO
set -euo pipefail
repo=${1:?usage: test_sh_tiers_test.sh REPO}
log() { printf '%s\n' "$*"; }
# shellcheck source=scripts/lib/tiers.sh
source "$repo/scripts/lib/tiers.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

line() { # NUMBER NAME RESULT
  printf '%d/9 Test #%d: %s ..........   %s    0.01 sec\n' "$1" "$1" "$2" "$3"
}
{
  line 1 unit.Json.Parse Passed
  line 2 unit.Topo.GpuListedAtItsAddress "***Skipped"
  line 3 netns.Veth.Pair Passed
  line 4 mpi.Smoke Passed
} >"$work/one-skip.log"
SELECTED="unit netns mpi fuzz" REQUIRED="unit netns mpi"
check_tiers_ran "$work/one-skip.log" >"$work/out" || fail "a single skipped unit test failed the run: $(cat "$work/out")"
grep -q "tier unit: 1 passed, 1 skipped, 0 failed" "$work/out" || fail "counts: $(cat "$work/out")"

{
  line 1 unit.Json.Parse Passed
  line 2 netns.Veth.Pair "***Skipped"
  line 3 netns.Veth.Route "***Skipped"
  line 4 mpi.Smoke Passed
} >"$work/netns-skipped.log"
if check_tiers_ran "$work/netns-skipped.log" >"$work/out"; then
  fail "a required tier whose every test skipped passed the run"
fi
grep -q "tier netns should run on this machine but nothing in it passed" "$work/out" ||
  fail "no reason given: $(cat "$work/out")"

# Root without CAP_SYS_ADMIN: every privileged netns test skips; the ones that drop their
# privileges on purpose still pass, and are no evidence that the tier ran.
{
  line 1 unit.Json.Parse Passed
  line 2 netns.Veth.Pair "***Skipped"
  line 3 netns.unprivileged.tests_skip Passed
  line 4 netns.unprivileged.exporter_accounting Passed
  line 5 mpi.Smoke Passed
} >"$work/netns-unprivileged-only.log"
if check_tiers_ran "$work/netns-unprivileged-only.log" >"$work/out"; then
  fail "a netns tier where only the unprivileged tests passed passed the run"
fi
grep -q "tier netns: 2 passed, 1 skipped, 0 failed" "$work/out" || fail "counts: $(cat "$work/out")"

line 1 unit.Json.Parse Passed >"$work/no-mpi.log"
SELECTED="unit mpi" REQUIRED="unit mpi"
if check_tiers_ran "$work/no-mpi.log" >/dev/null; then fail "a required tier with no test passed"; fi
SELECTED="unit gpu" REQUIRED="unit"
check_tiers_ran "$work/no-mpi.log" >/dev/null || fail "an optional tier with no test failed the run"
echo "PASS: tiers.sh tells a skipping test from a tier that did not run"
