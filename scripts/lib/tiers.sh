# tiers.sh - which test tiers ran, from ctest's progress lines; sourced by scripts/test.sh
# (which sets SELECTED, REQUIRED and a log() function) and by its own test.

# Counts passed/skipped/failed per tier from ctest's progress lines
# ("12/63 Test #12: unit.Json.Parse ....   Passed    0.01 sec"). Tests named
# TIER.unprivileged.* drop their privileges on purpose and pass anywhere: counted, but no
# evidence that the tier could run (root without CAP_SYS_ADMIN skips every other one).
check_tiers_ran() {
  local results=$1 ok=0 t passed skipped failed
  for t in $SELECTED; do
    [[ $t == fuzz ]] && continue # not a ctest tier: run_fuzz fails the run itself
    read -r passed skipped failed evidence < <(awk -v tier="$t" '
      / Test +#[0-9]+: / {
        name = $0; sub(/.*Test +#[0-9]+: /, "", name); split(name, parts, ".")
        if (parts[1] != tier) next
        if ($0 ~ /\*\*\*Skipped/ || $0 ~ /Not Run/) s++
        else if ($0 ~ / Passed /) { p++; if (parts[2] != "unprivileged") e++ }
        else f++
      }
      END { printf "%d %d %d %d\n", p, s, f, e }' "$results")
    log "tier $t: $passed passed, $skipped skipped, $failed failed"
    # A tier this machine must run fails the run when nothing in it passed: no tests
    # found, or every one skipped (no root for netns, no lab for vm). Single skips are a
    # test's own business: a unit test that needs a GPU, or one that needs its absence.
    if [[ " $REQUIRED " == *" $t "* ]] && ((evidence == 0)); then
      log "tier $t should run on this machine but nothing in it passed" \
        "$( ((passed)) && echo "(only the tests that run unprivileged on purpose)")"
      ok=1
    fi
  done
  return $ok
}
