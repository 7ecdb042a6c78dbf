#!/usr/bin/env bash
# The README's first command, as a new user runs it: scripts/demo.sh on the two-node
# soft-RoCE lab. Checks its exit status, that every step of the main job left a record
# with a passing (or honestly expected) verdict, that the figures and JSON the report
# links exist, and that report.html renders in a browser.
#   demo_test.sh REPO
set -euo pipefail
repo=${1:?usage: demo_test.sh REPO}
if ! "$repo/scripts/lab.sh" --check >/dev/null 2>&1; then
  echo "SKIP: the soft-RoCE lab cannot run here (scripts/lab.sh --check)"
  exit 77
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
"$repo/scripts/demo.sh" --out "$out/report" >"$out/demo.txt" 2>&1 || rc=$?
tail -n 25 "$out/demo.txt"
report=$out/report
((rc == 0)) || fail "demo.sh exited $rc"
grep -q "^report: $report/report.html$" "$out/demo.txt" || fail "demo.sh did not print the report's path"

# The steps of the main job, by where they ran and their id.
for want in host:build host:lab node1:pfc_plan node1:pfc_apply node1:lint node2:pfc_plan \
  node2:pfc_apply node2:lint node1:cni_add node1:cni_gid \
  node2:cni_add node2:agent_refusal node2:tcp node2:rdma_bw node2:rdma_lat node2:mesh node1:cni_del \
  node2:cni_gid_gone node1:exporter node2:exporter node1:nccltest node2:nccltest_rank \
  node1:prometheus node1:prom_rdma node1:prom_nccltest; do
  where=${want%%:*} id=${want#*:}
  files=("$report/steps/$where"-[0-9][0-9]-"$id".json)
  [[ -f ${files[0]} ]] || fail "no record of step $id on $where"
  verdict=$(jq -r .verdict "${files[0]}")
  [[ $verdict == pass || $verdict == expected ]] || fail "step $id on $where: $verdict"
done
bad=$(jq -rs '[.[] | select(.verdict == "fail") | "\(.where) \(.id)"] | join(", ")' \
  "$report"/steps/*.json)
[[ -z $bad ]] || fail "failed steps: $bad"

# Everything the page links is in the folder.
while read -r link; do
  [[ -e $report/$link ]] || fail "report.html links $link, which is missing"
done < <(grep -o 'href="[^"#:]*"' "$report/report.html" | sed 's/href="//; s/"$//' | sort -u)
jq -e '.tests[0].matrix | length == 2' "$report/json/mesh.json" >/dev/null ||
  fail "the mesh did not measure both nodes"
for figure in mesh-heatmap.svg nccltest-busbw.svg; do
  grep -q "<svg" "$report/$figure" 2>/dev/null || fail "no $figure in the report folder"
done

"$repo/tests/demo/report_render_test.sh" "$repo" "$report"
echo "PASS: the demo ran every step and its report renders"
