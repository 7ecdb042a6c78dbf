# shellcheck shell=bash
# Shared by the per-pod accounting benchmarks, accounting_packet_cost.sh and
# exporter_accounting.sh (sourced, not run): their checks, network namespaces and a work folder
# removed on exit, the pods' records and the exporter's accounting-only configuration.

# accounting_bench_init ROOT: exits unless run as root with fabric-exporter built (FABRIC_EXPORTER,
# else ROOT's release tree); sets EXPORTER, and WORK to a fresh folder. On exit the process in
# BACKGROUND_PID is stopped, and WORK and every namespace of add_namespace removed.
accounting_bench_init() {
  EXPORTER=${FABRIC_EXPORTER:-$1/build/release/exporters/fabric-exporter}
  [[ -x $EXPORTER ]] || { echo "build fabric-exporter first (scripts/build.sh release)" >&2; exit 1; }
  ((EUID == 0)) || { echo "needs root (network namespaces, iptables)" >&2; exit 1; }
  BACKGROUND_PID=
  BENCH_NAMESPACES=()
  WORK=$(mktemp -d)
  mkdir "$WORK/pods"
  trap accounting_bench_cleanup EXIT
}

accounting_bench_cleanup() {
  local ns
  if [[ -n $BACKGROUND_PID ]]; then
    kill "$BACKGROUND_PID" 2>/dev/null || true
    wait "$BACKGROUND_PID" 2>/dev/null || true
  fi
  for ns in "${BENCH_NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}

# add_namespace NAME: a network namespace with lo up, removed on exit.
add_namespace() {
  BENCH_NAMESPACES+=("$1")
  ip netns add "$1"
  ip -n "$1" link set lo up
}

# write_pod_record NAME IP: the record the CNI plugin leaves for a pod, in $WORK/pods.
write_pod_record() {
  printf '{"schema_version":1,"pod":{"namespace":"bench","name":"%s"},"ips":["%s"]}\n' "$1" "$2" \
    >"$WORK/pods/$1.json"
}

# write_pod_records FIRST END: pods pod-FIRST .. pod-(END-1), at 10.200.x.y, 250 to a /24.
write_pod_records() {
  local i
  for ((i = $1; i < $2; i++)); do write_pod_record "pod-$i" "10.200.$((i / 250)).$((i % 250 + 1))"; done
}

# write_accounting_config BACKEND PODS TIMEOUT: $WORK/config.yaml, with accounting the only
# collector, over $WORK/pods, for up to PODS pods in one class (10.0.0.0/8). It reconciles
# once, at the start: nothing else in the exporter works during a measurement.
write_accounting_config() {
  cat >"$WORK/config.yaml" <<YAML
collectors:
  rdma: {enabled: false}
  pfc: {enabled: false}
  dcb: {enabled: false}
  accounting:
    backend: $1
    reconcile_interval: 1h
    cni_state_dir: $WORK/none
    pod_records_dir: $WORK/pods
    max_pods: $2
    max_series: $(($2 * 8 + 100))
    timeout: $3
    classes: [{name: cluster, networks: [10.0.0.0/8]}]
YAML
}
