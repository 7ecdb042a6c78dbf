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

# As the DaemonSet runs it: clients only from the parameter plane, and with the token of
# a Secret (here a file the host wrote, readable by root only). The clients below read the
# same file through FABRIC_PROBE_TOKEN_FILE.
export FABRIC_PROBE_TOKEN_FILE=$shared/agent-token

agent_start() {
  "$probe" server --port "$agent_port" --port-file "$sync/agent$node.port" \
    --allow 10.77.0.0/24 --token-file "$FABRIC_PROBE_TOKEN_FILE" \
    2>"$DEMO_STEPS/logs/node$node-agent.log" &
  pids+=($!)
  step agent "fabric-probe agent on $FABRIC_LAB_ADDR:$agent_port (token and allow-list)" -- \
    wait_for "$sync/agent$node.port" 60
}

# A client without the token must be refused, with a message that says why.
agent_refuses_strangers() {
  local out
  if out=$(FABRIC_PROBE_TOKEN_FILE= "$probe" tcp "$first" --duration 1s 2>&1); then
    echo "a client without the token was served" >&2
    return 1
  fi
  echo "$out"
  grep -q token <<<"$out"
}

peer_probes() {
  local k
  for ((k = 1; k <= FABRIC_LAB_NODES; ++k)); do
    wait_for "$sync/agent$k.port" 120 || true
  done
  step agent_refusal "node 1's agent refuses a client without the token" -- agent_refuses_strangers
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

# --- fabric-nccltest: MPI ranks on every node ------------------------------------------
# mpirun on node 1 starts the other ranks over ssh: every other node runs an sshd of its
# own on the lab address, with throw-away keys in tmpfs; the public halves travel through
# the shared folder.
ssh_keys=/run/fkdemo-ssh
ssh_agent_cmd() {
  echo "ssh -i $ssh_keys/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" \
    "-o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=20"
}

sshd_start() {
  wait_for "$sync/client.pub" 300 || return
  cp "$sync/client.pub" "$ssh_keys/authorized_keys"
  chmod 600 "$ssh_keys/authorized_keys"
  ssh-keygen -q -t ed25519 -N '' -C fkdemo-host -f "$ssh_keys/host_key" || return
  cat >"$ssh_keys/sshd_config" <<CONFIG
ListenAddress ${FABRIC_LAB_ADDR%/*}
HostKey $ssh_keys/host_key
AuthorizedKeysFile $ssh_keys/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $ssh_keys/sshd.pid
CONFIG
  mkdir -p /run/sshd
  /usr/sbin/sshd -f "$ssh_keys/sshd_config" -E "$ssh_keys/sshd.log" || return
  touch "$sync/sshd$node.ready"
}

# Node 1 waits for one of the two words: the sshd is up, or it is not coming.
sshd_serve() {
  sshd_start && return 0
  local rc=$?
  echo "node $node could not start its sshd (exit $rc)" >"$sync/sshd$node.failed"
  return "$rc"
}

# The exit status that says "ran, but with every rank on this node": the lab could not
# start a rank on another node, and the report says so.
readonly nccltest_local_only=3

nccltest_mpirun() {
  local hosts k mpirun nccltest_args
  mpirun=$(readlink -f "$(command -v mpirun)")
  nccltest_args=(--backend mpi -b 8 -e 4M -f 2 -n 10 -w 2 -c 1 -T 120
    -J "$DEMO_STEPS/json/nccltest.json" --plot "$DEMO_STEPS/nccltest-busbw.svg"
    --prom "$textfiles/nccltest.prom")
  hosts=$(printf '%s,' "${addrs[@]}")
  # Another node starts its sshd after its own probes, which take minutes on a slow host:
  # node 1 waits for the sshd or for that node's word that it could not start one.
  for ((k = 2; k <= FABRIC_LAB_NODES; ++k)); do
    if ! wait_for_outcome "$sync/sshd$k.ready" "$sync/sshd$k.failed" 600; then
      echo "node $k has no sshd for mpirun: running $FABRIC_LAB_NODES ranks on node $node" \
        "instead (the all-reduce then crosses no network)" >&2
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        "$mpirun" -np "$FABRIC_LAB_NODES" --oversubscribe --mca btl self,vader \
        "$build/nccltest/fabric-nccltest" "${nccltest_args[@]}" || return
      return "$nccltest_local_only"
    fi
  done
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    "$mpirun" --host "${hosts%,}" -np "$FABRIC_LAB_NODES" \
    --mca plm_rsh_agent "$(ssh_agent_cmd)" --mca btl self,tcp \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    "$build/nccltest/fabric-nccltest" "${nccltest_args[@]}"
}

nccltest_run() {
  mkdir -p "$ssh_keys"
  chmod 700 "$ssh_keys"
  if ((node == 1)); then
    ssh-keygen -q -t ed25519 -N '' -C fkdemo -f "$ssh_keys/id"
    cp "$ssh_keys/id.pub" "$sync/client.pub.tmp" && mv "$sync/client.pub.tmp" "$sync/client.pub"
    step nccltest "fabric-nccltest: all-reduce across $FABRIC_LAB_NODES nodes, MPI backend" \
      --writes json/nccltest.json --expect "$nccltest_local_only:the other nodes could not start a rank, so every rank ran on node 1" \
      -- nccltest_mpirun
    touch "$sync/nccltest.done"
  else
    step sshd "an sshd on $FABRIC_LAB_ADDR for mpirun's ranks" -- sshd_serve
    step nccltest_rank "this node's rank took part in the all-reduce" -- \
      wait_for "$sync/nccltest.done" 600
    [[ -f $ssh_keys/sshd.pid ]] && kill "$(cat "$ssh_keys/sshd.pid")" 2>/dev/null
  fi
}

# --- fabric-exporter on every node, and a real Prometheus on node 1 -----------------------
exporter_port=10900
textfiles=$shared/textfile-node$node

exporter_start() {
  mkdir -p "$textfiles"
  # The lab's subnet is the parameter plane; the pod is found from fabric-cni's records.
  cat >"$DEMO_STEPS/json/node$node-exporter.yaml" <<YAML
http:
  listen: "${FABRIC_LAB_ADDR%/*}:$exporter_port"
collectors:
  textfile:
    directory: $textfiles
  accounting:
    cni_state_dir: $pod_dir/state
    classes:
      - name: parameter_plane
        networks: [10.77.0.0/24]
YAML
  "$build/exporters/fabric-exporter" --config "$DEMO_STEPS/json/node$node-exporter.yaml" \
    2>"$DEMO_STEPS/logs/node$node-exporter.log" &
  pids+=($!)
  step exporter "fabric-exporter serves /metrics on ${FABRIC_LAB_ADDR%/*}:$exporter_port" \
    -- exporter_check
  touch "$sync/exporter$node.ready"
}

# Until the exporter answers (bounded), then the scrape must pass promtool's lint.
exporter_check() {
  local url=http://${FABRIC_LAB_ADDR%/*}:$exporter_port/metrics deadline=$((SECONDS + 60))
  until curl -sf -o "$DEMO_STEPS/node$node-metrics.txt" "$url"; do
    ((SECONDS < deadline)) || { echo "no answer from $url" >&2; return 1; }
    sleep 0.2
  done
  promtool check metrics <"$DEMO_STEPS/node$node-metrics.txt"
}

prom_query() { # NAME EXPRESSION: the instant query's result, kept as json/prom-NAME.json
  curl -sfG --data-urlencode "query=$2" http://127.0.0.1:9090/api/v1/query |
    tee "$DEMO_STEPS/json/prom-$1.json" | jq -e '.status == "success" and (.data.result | length > 0)' >/dev/null
}

# Both exporters up in Prometheus' own view, and the nccltest textfile scraped.
prometheus_ready() {
  local deadline=$((SECONDS + 120)) up
  while ((SECONDS < deadline)); do
    up=$(curl -sfG --data-urlencode 'query=sum(up{job="fabric"})' \
      http://127.0.0.1:9090/api/v1/query | jq -r '.data.result[0].value[1] // 0' 2>/dev/null)
    if [[ $up == "$FABRIC_LAB_NODES" ]] && prom_query nccltest_up fabric_nccltest_success; then
      return 0
    fi
    sleep 0.5
  done
  echo "Prometheus sees $up of $FABRIC_LAB_NODES exporters up, or no nccltest series" >&2
  return 1
}

exporter_scrape() {
  local k
  for ((k = 1; k <= FABRIC_LAB_NODES; ++k)); do wait_for "$sync/exporter$k.ready" 120; done
  local targets
  targets=$(printf '"%s:'"$exporter_port"'",' "${addrs[@]}")
  cat >"$DEMO_STEPS/json/prometheus.yml" <<YAML
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: fabric
    honor_labels: true
    static_configs:
      - targets: [${targets%,}]
YAML
  prometheus --config.file="$DEMO_STEPS/json/prometheus.yml" --storage.tsdb.path=/tmp/fkdemo-prom \
    --web.listen-address=127.0.0.1:9090 --log.level=warn \
    2>"$DEMO_STEPS/logs/node$node-prometheus.log" &
  pids+=($!)
  step prometheus "Prometheus on node 1 scrapes every node's exporter" -- prometheus_ready
  step prom_rdma "RDMA packets moved, per node and direction (rxe counts packets, not bytes)" \
    -- prom_query rdma_packets 'sum by (instance, direction) (fabric_rdma_port_packets_total)'
  step prom_pods "pod traffic by class, per pod (the pods fabric-cni attached; their macvlan traffic bypasses the node's netfilter)" -- \
    prom_query pod_traffic 'sum by (instance, pod, class, direction) (fabric_pod_traffic_bytes_total) or fabric_accounting_pods'
  step prom_dcb "DCB state per node (0: the NIC has no DCB)" -- \
    prom_query dcb 'fabric_dcb_supported'
  step prom_nccltest "fabric-nccltest's average bus bandwidth, from its textfile" -- \
    prom_query nccltest_busbw 'fabric_nccltest_average_bus_bandwidth_bytes_per_second'
  step prom_errors "collector errors per node and collector" -- \
    prom_query collector_errors 'sum by (instance, collector) (fabric_exporter_collector_errors_total)'
}

exporter_run() {
  if ((node == 1)); then
    exporter_scrape
  fi
}
