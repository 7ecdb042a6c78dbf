# demo-node-steps.sh - the demo's steps that involve more than one command, sourced by
# demo-node.sh (which sets node, first, addrs, sync, pids, probe, cni, build, repo, shared).

# --- fabric-cni: a pod attached as Multus attaches it -------------------------------------
pod=fkdemo-pod
pod_dir=
pod_attached=0

cni_call() {
  CNI_COMMAND=$1 CNI_CONTAINERID=fkdemo-$node CNI_NETNS=/var/run/netns/$pod CNI_IFNAME=net1 \
    CNI_PATH=/usr/lib/cni \
    CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=training;K8S_POD_NAME=trainer-$node;K8S_POD_INFRA_CONTAINER_ID=fkdemo-$node" \
    "$cni" <"$pod_dir/net.json"
}

# The pod's RoCE v2 GID: on rxe0, with the pod's address and the pod's interface as netdev.
pod_gid_present() {
  local address
  address=$(jq -r '.ips[0].address | split("/")[0]' "$DEMO_STEPS/json/node$node-cni-add.json")
  "$probe" devices --json | jq -e --arg a "$address" \
    '[.devices[].ports[].gids[] | select(.type == "RoCE v2" and .ipv4 == $a)] | length == 1'
}

pod_attach() {
  pod_dir=$(mktemp -d)
  ip netns add "$pod"
  # Each node hands out its own slice of the lab's subnet, as whereabouts would.
  local low=$((100 + 10 * node)) high=$((109 + 10 * node))
  jq -n --arg rdma "$FABRIC_LAB_RDMA_DEV" --arg state "$pod_dir/state" \
    --arg first_ip "10.77.0.$low" --arg last_ip "10.77.0.$high" --arg data "$pod_dir/ipam" \
    '{cniVersion: "1.1.0", name: "roce-shared", type: "fabric-cni", rdmaDevice: $rdma,
      gidCheck: "require", gidTimeoutMs: 10000, stateDir: $state,
      ipam: {type: "host-local", dataDir: $data,
             ranges: [[{subnet: "10.77.0.0/24", rangeStart: $first_ip, rangeEnd: $last_ip}]]}}' \
    >"$pod_dir/net.json"
  cp "$pod_dir/net.json" "$DEMO_STEPS/json/node$node-cni-config.json"
  step cni_add "fabric-cni ADD: pod trainer-$node gets net1 on $FABRIC_LAB_NETDEV (shared mode)" \
    --json "json/node$node-cni-add.json" -- cni_call ADD
  if [[ -s $DEMO_STEPS/json/node$node-cni-add.json ]] &&
    jq -e '.ips | length > 0' "$DEMO_STEPS/json/node$node-cni-add.json" >/dev/null; then
    pod_attached=1
  fi
  step cni_gid "the pod's RoCE v2 GID is on $FABRIC_LAB_RDMA_DEV" -- pod_gid_present
  # A runtime's CHECK carries the ADD's result as prevResult.
  if ((pod_attached)); then
    jq --slurpfile r "$DEMO_STEPS/json/node$node-cni-add.json" '. + {prevResult: $r[0]}' \
      "$pod_dir/net.json" >"$pod_dir/check.json" && mv "$pod_dir/check.json" "$pod_dir/net.json"
  fi
  step cni_check "fabric-cni CHECK: interface, address, MTU and GID as recorded" -- cni_call CHECK
}

pod_gid_gone() {
  ! "$probe" devices --json | jq -e --arg a "$1" \
    '[.devices[].ports[].gids[] | select(.ipv4 == $a)] | length > 0' >/dev/null
}

pod_detach() {
  [[ -n $pod_dir ]] || return 0
  if ((pod_attached)); then
    local address
    address=$(jq -r '.ips[0].address | split("/")[0]' "$DEMO_STEPS/json/node$node-cni-add.json")
    step cni_del "fabric-cni DEL: trainer-$node detached, its address released" -- cni_call DEL
    step cni_gid_gone "the pod's GID is gone with it" -- pod_gid_gone "$address"
  fi
  ip netns del "$pod" 2>/dev/null
  rm -rf "$pod_dir"
  pod_dir=
}

# --- fabric-probe agents and the probes between nodes ---------------------------------
agent_port=18515

agent_start() {
  "$probe" server --port "$agent_port" --port-file "$sync/agent$node.port" \
    2>"$DEMO_STEPS/logs/node$node-agent.log" &
  pids+=($!)
  step agent "fabric-probe agent listening on $FABRIC_LAB_ADDR:$agent_port" -- \
    wait_for "$sync/agent$node.port" 60
}

peer_probes() {
  local k
  for ((k = 1; k <= FABRIC_LAB_NODES; ++k)); do
    wait_for "$sync/agent$k.port" 120 || true
  done
  step tcp "fabric-probe tcp to node 1: is the network itself fine?" \
    --json "json/node$node-tcp.json" -- "$probe" tcp "$first" --duration 2s --json
  step rdma_bw "fabric-probe bw to node 1: RDMA write bandwidth, 4 KiB to 64 KiB" \
    --json "json/node$node-rdma-bw.json" -- "$probe" bw "$first" --sweep 4K:64K --iters 500 --json
  step rdma_lat "fabric-probe lat to node 1: RDMA send latency" \
    --json "json/node$node-rdma-lat.json" -- "$probe" lat "$first" --iters 500 --json
  local hosts
  hosts=$(printf '%s,' "${addrs[@]}")
  step mesh "fabric-probe mesh: every pair of nodes, RDMA bandwidth, with its heatmap" \
    --expect "3:an outlier flagged among 2 nodes is noise of the emulated fabric" \
    --json "json/mesh.json" -- "$probe" mesh --hosts "${hosts%,}" --test rdma_bw \
    --duration 2s --heatmap "$DEMO_STEPS/mesh-heatmap.svg" --json
}

# --- fabric-nccltest and fabric-exporter (filled in below as they land) ------------------
nccltest_run() { :; }
exporter_run() { :; }
