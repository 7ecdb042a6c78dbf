#!/usr/bin/env bash
# vm tier: `fabric-probe mesh` with its default tests (RDMA write bandwidth and send
# latency) across the lab's nodes, each running an agent. Run on every node by
#   scripts/lab.sh --nodes 3 -- tests/vm/probe/mesh_rdma.sh build/release/probes/fabric-probe
# Node 1 runs the mesh and checks that every pair of nodes has both figures in the JSON
# report, and that CSV and SVG files came out; the other nodes serve until it is done.
set -euo pipefail

PROBE=$(realpath "${1:?usage: mesh_rdma.sh FABRIC_PROBE_BINARY}")
shared=${FABRIC_LAB_SHARED:?run through scripts/lab.sh}
nodes=$FABRIC_LAB_NODES
wait_for() { # FILE: bounded wait for another node's file
  local _
  for _ in $(seq 900); do [[ -e $1 ]] && return 0; sleep 0.2; done
  echo "mesh_rdma.sh: node $FABRIC_LAB_NODE gave up waiting for $1" >&2
  return 1
}

"$PROBE" server --port 18515 --port-file "$shared/agent$FABRIC_LAB_NODE.port" \
  >/dev/null 2>"$shared/agent$FABRIC_LAB_NODE.log" &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null || true' EXIT

if [[ $FABRIC_LAB_NODE != 1 ]]; then
  wait_for "$shared/mesh.done"
  exit 0
fi
trap 'touch "$shared/mesh.done"; kill $agent 2>/dev/null; wait $agent 2>/dev/null || true' EXIT
for ((k = 1; k <= nodes; k++)); do wait_for "$shared/agent$k.port"; done

work=$(mktemp -d)
hosts=$(tr ' ' ',' <<<"$FABRIC_LAB_ADDRS")
rc=0
"$PROBE" mesh --hosts "$hosts" -D 1s -n 200 --json --csv "$work/mesh.csv" \
  --heatmap "$work/mesh.svg" >"$work/mesh.json" 2>"$work/mesh.err" || rc=$?
failures=0
json() { jq -e "$@" "$work/mesh.json" >/dev/null; }
check() { # DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; failures=$((failures + 1)); fi
}
# 0, or 3 when emulation noise looks like an outlier; never a pair without a result (2).
check "mesh exit status is 0 or 3 (was $rc)" test "$rc" = 0 -o "$rc" = 3
check "the report lists both default tests" json '[.tests[].metric] == ["rdma_bw", "rdma_lat"]'
check "no pair failed" json '[.tests[].failures[]] | length == 0'
check "every pair has a positive figure, the diagonal none" json --argjson n "$nodes" '
  all(.tests[]; .matrix as $m | all(range($n) as $s | range($n) as $d | [$s, $d];
    if .[0] == .[1] then $m[.[0]][.[1]] == null else $m[.[0]][.[1]] > 0 end))'
check "CSV and SVG for each test" test -s "$work/mesh-rdma_bw.csv" -a -s "$work/mesh-rdma_lat.csv" \
  -a -s "$work/mesh-rdma_bw.svg" -a -s "$work/mesh-rdma_lat.svg"
if [[ $failures != 0 ]]; then
  cat "$work/mesh.err" "$work/mesh.json" >&2
fi
rm -rf "$work"
echo "$failures failure(s)"
exit $((failures > 0))
