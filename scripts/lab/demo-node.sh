#!/usr/bin/env bash
# Runs on every node of the demo's soft-RoCE lab (scripts/demo.sh):
#   every node  lists its RDMA devices and checks the RoCE v2 GID of its address;
#   node 1      then serves as the probe agent until node 2 is done;
#   node 2      runs the pre-flight lint, TCP and RDMA probes against node 1, and has
#               fabric-cni attach a pod to the RoCE network, prove the pod's GID,
#               check and detach it.
# Usage (inside the lab): demo-node.sh FABRIC_PROBE FABRIC_CNI
set -euo pipefail
probe=$1 cni=$2
shared=$FABRIC_LAB_SHARED

step() { printf '\n-- %s\n' "$*"; }
# Waits (bounded) for a file another node writes into the shared folder.
wait_for() {
  local _
  for _ in $(seq 600); do [[ -e $1 ]] && return 0; sleep 0.2; done
  echo "demo-node.sh: gave up waiting for $1" >&2
  return 1
}

echo "node $FABRIC_LAB_NODE of $FABRIC_LAB_NODES: $FABRIC_LAB_NETDEV $FABRIC_LAB_ADDR"
"$probe" devices
if "$probe" devices --json | jq -e --arg addr "$FABRIC_LAB_ADDR" \
    '[.devices[].ports[].gids[] | select(.type == "RoCE v2" and .ipv4 == $addr)] | length > 0' \
    >/dev/null; then
  echo "RoCE v2 GID for $FABRIC_LAB_ADDR: present"
else
  echo "RoCE v2 GID for $FABRIC_LAB_ADDR: MISSING" >&2
  exit 1
fi
[[ $FABRIC_LAB_NODES -ge 2 ]] || exit 0

if [[ $FABRIC_LAB_NODE == 1 ]]; then
  "$probe" server --port 18515 --port-file "$shared/agent.port" 2>/dev/null &
  agent=$!
  wait_for "$shared/client.done" || true
  kill "$agent"
  wait "$agent" || true
  exit 0
fi
[[ $FABRIC_LAB_NODE == 2 ]] || exit 0

trap 'touch "$shared/client.done"' EXIT
agent=$(cut -d' ' -f1 <<<"$FABRIC_LAB_ADDRS")
wait_for "$shared/agent.port"

step "pre-flight lint of this node (a soft-RoCE NIC has no DCB: PFC is unknown)"
"$probe" lint || true

step "TCP to node 1's agent: is the network itself fine?"
"$probe" tcp "$agent" --duration 2s --iters 200

step "RDMA write bandwidth to node 1, 4 KiB to 64 KiB, counters from both ends"
"$probe" bw "$agent" --sweep 4K:64K --iters 500

step "RDMA send latency to node 1"
"$probe" lat "$agent" --iters 500

step "fabric-cni: attach a pod to the RoCE network (shared mode, macvlan on $FABRIC_LAB_NETDEV)"
work=$(mktemp -d)
pod=fkdemo
trap 'ip netns del "$pod" 2>/dev/null || true; rm -rf "$work"; touch "$shared/client.done"' EXIT
ip netns add "$pod"
cat >"$work/net.json" <<JSON
{"cniVersion": "1.1.0", "name": "roce", "type": "fabric-cni",
 "rdmaDevice": "$FABRIC_LAB_RDMA_DEV", "gidCheck": "require", "stateDir": "$work/state",
 "ipam": {"type": "static", "addresses": [{"address": "10.77.0.200/24"}]}}
JSON
cni() {
  CNI_COMMAND=$1 CNI_CONTAINERID=demo CNI_NETNS=/var/run/netns/$pod CNI_IFNAME=net1 \
    CNI_PATH=/usr/lib/cni CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=pod" \
    "$cni" <"$work/net.json"
}
cni ADD >"$work/result.json"
jq . "$work/result.json"
ip -n "$pod" -br address show net1
echo "the pod's RoCE v2 GID, on the node's RDMA device with the pod's interface as netdev:"
"$probe" devices | grep -E 'INDEX|10\.77\.0\.200'
# A runtime's CHECK carries the ADD's result as prevResult.
jq --slurpfile r "$work/result.json" '. + {prevResult: $r[0]}' "$work/net.json" >"$work/check.json"
mv "$work/check.json" "$work/net.json"
cni CHECK
echo "CHECK: interface, address, MTU and GID as recorded"
cni DEL
echo "DEL: detached"
"$probe" devices | grep -q '10\.77\.0\.200' && { echo "the pod's GID outlived DEL" >&2; exit 1; }
echo "the pod's GID is gone"
