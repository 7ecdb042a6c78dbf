#!/usr/bin/env bash
# The tools' folders (cni, pfc, probes, nccltest, exporters) hold each one tool: no tool
# includes another tool's header or links another tool's library, and no shared part
# (libs/) includes or links any tool's. What has not moved below
# the tools yet is listed in tests/data/layering/remaining.txt, one "tool -> header" or
# "tool -> library" a line; a crossing not listed fails, and so does a listed one that is
# gone, so the list only shrinks (docs/architecture.md, "Layers").
#   layering_test.sh REPO
#   layering_test.sh REPO --self-test     (the check refuses a planted crossing)
set -euo pipefail
repo=${1:?usage: layering_test.sh REPO [--self-test]}
tools=(cni pfc probes nccltest exporters)
remaining=$repo/tests/data/layering/remaining.txt

# Every crossing in a tree: "tool -> other/path.h" for includes, "tool -> fabric::other" for
# the libraries a tool's CMakeLists link. The shared parts under libs/ are below every tool,
# so any tool of theirs is a crossing too ("libs/dcb -> pfc/profile.h").
crossings() {
  local root=$1 tool other part
  local -a below=()
  for part in "$root"/libs/*/; do [[ -d $part ]] && below+=("libs/$(basename "$part")"); done
  for tool in "${tools[@]}" "${below[@]}"; do
    for other in "${tools[@]}"; do
      [[ $tool == "$other" ]] && continue
      grep -rhoE "^#include \"$other/[^\"]+\"" "$root/$tool" \
        --include='*.h' --include='*.cpp' --include='*.cu' --include='*.c' 2>/dev/null |
        sed -E "s|^#include \"(.*)\"|$tool -> \1|" || true
      find "$root/$tool" -name CMakeLists.txt -exec grep -hoE "fabric::$other\b" {} + 2>/dev/null |
        sed "s|^|$tool -> |" || true
    done
  done | sort -u
}

check() {
  local root=$1 found expected status=0
  found=$(crossings "$root")
  # An empty list (every part moved) is no error of grep's.
  expected=$(grep -vE '^(#|$)' "$remaining" | sort -u || true)
  local new gone line
  new=$(comm -23 <(echo "$found") <(echo "$expected") | sed '/^$/d')
  gone=$(comm -13 <(echo "$found") <(echo "$expected") | sed '/^$/d')
  if [[ -n $new ]]; then
    echo "a tool reaches into another tool's folder (move the part below the tools):" >&2
    while IFS= read -r line; do echo "  $line"; done <<<"$new" >&2
    status=1
  fi
  if [[ -n $gone ]]; then
    echo "no longer crossing, remove from tests/data/layering/remaining.txt:" >&2
    while IFS= read -r line; do echo "  $line"; done <<<"$gone" >&2
    status=1
  fi
  return $status
}

if [[ ${2:-} == --self-test ]]; then
  # A copy of the tools with one crossing planted must fail, naming it.
  copy=$(mktemp -d)
  trap 'rm -rf "$copy"' EXIT
  for tool in "${tools[@]}" libs; do cp -r "$repo/$tool" "$copy/"; done
  echo '#include "nccltest/options.h"' >"$copy/pfc/planted.cpp"
  echo '#include "pfc/profile.h"' >"$copy/libs/dcb/planted.cpp"
  if out=$(check "$copy" 2>&1); then
    echo "the check passed a planted include of nccltest/options.h in pfc" >&2
    exit 1
  fi
  grep -q 'pfc -> nccltest/options.h' <<<"$out" || { echo "$out" >&2; exit 1; }
  grep -q 'libs/dcb -> pfc/profile.h' <<<"$out" || { echo "$out" >&2; exit 1; }
  echo "the check refuses a planted crossing: ok"
  exit 0
fi
check "$repo"
listed=$(grep -cvE '^(#|$)' "$remaining" || true)
if ((listed == 0)); then
  echo "no tool reaches into another's folder"
else
  echo "no tool reaches into another's folder beyond the $listed listed crossings"
fi
