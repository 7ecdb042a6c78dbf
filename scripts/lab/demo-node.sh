#!/usr/bin/env bash
# Runs on every node of the demo's soft-RoCE lab (scripts/demo.sh). Each step is recorded
# by demo-lib.sh into the shared report folder; the host builds the report from it.
#   every node  lists its RDMA devices and checks the RoCE v2 GID of its address, plans
#               and applies the example PFC profile (a virtual NIC has no DCB: that is the
#               honest outcome), lints itself, attaches a "pod" with fabric-cni exactly as
#               Multus would (shared mode on rxe0, host-local IPAM), and runs the probe
#               agent with the token and allow-list the DaemonSet uses;
#   node 2      probes node 1 (tcp, bw, lat) and runs the mesh across all agents;
#   all nodes   run fabric-nccltest together (MPI backend) when the lab can start ranks on
#               every node, and fabric-exporter, which node 1's Prometheus scrapes;
#   at the end  every node detaches its pod and stops what it started.
# Usage (inside the lab): demo-node.sh BUILD_DIR REPO
set -uo pipefail
build=$1 repo=$2
shared=$FABRIC_LAB_SHARED
node=$FABRIC_LAB_NODE
probe=$build/probes/fabric-probe
pfc=$build/pfc/fabric-pfc
cni=$build/cni/fabric-cni

export DEMO_STEPS=$shared/report DEMO_WHERE=node$node
# shellcheck source=scripts/lab/demo-lib.sh
source "$repo/scripts/lab/demo-lib.sh"
# shellcheck source=scripts/lab/demo-node-steps.sh
source "$repo/scripts/lab/demo-node-steps.sh"

read -r -a addrs <<<"$FABRIC_LAB_ADDRS"
first=${addrs[0]}
sync=$shared/sync
mkdir -p "$sync"

pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pod_detach
}
trap cleanup EXIT

step devices "RDMA devices and the RoCE v2 GID of $FABRIC_LAB_ADDR" \
  --json "json/node$node-devices.json" -- "$probe" devices --json
step roce_gid "the RoCE v2 GID of $FABRIC_LAB_ADDR is in rxe0's table" -- \
  jq -e --arg addr "${FABRIC_LAB_ADDR%/*}" \
  '[.devices[].ports[].gids[] | select(.type == "RoCE v2" and .ipv4 == $addr)] | length > 0' \
  "$DEMO_STEPS/json/node$node-devices.json"

profile=$repo/deploy/pfc/roce-lossless.yaml
step pfc_plan "fabric-pfc plan: $FABRIC_LAB_NETDEV against the lossless RoCE profile" \
  --expect "4:a virtio NIC has no DCB support" --json "json/node$node-pfc-plan.json" -- \
  "$pfc" plan --profile "$profile" --json "$FABRIC_LAB_NETDEV"
step pfc_apply "fabric-pfc apply: the profile on $FABRIC_LAB_NETDEV" \
  --expect "4:a virtio NIC has no DCB support" --json "json/node$node-pfc-apply.json" -- \
  "$pfc" apply --profile "$profile" --json "$FABRIC_LAB_NETDEV"
step lint "fabric-probe lint: pre-flight verdicts for this node" \
  --expect "3:soft-RoCE has no PFC and no GPU: warnings, no fault" \
  --json "json/node$node-lint.json" -- "$probe" lint --json

pod_attach
agent_start
exporter_start

if ((node == 2)); then
  peer_probes
fi
nccltest_run
exporter_run

# Every node keeps its agent and exporter up until all nodes are done with them.
touch "$sync/node$node.done"
for ((k = 1; k <= FABRIC_LAB_NODES; ++k)); do
  step barrier_$k "node $k finished its steps" -- wait_for "$sync/node$k.done" 600
done
# The records carry every step's verdict; the exit status says only that this script
# reached its end.
exit 0
