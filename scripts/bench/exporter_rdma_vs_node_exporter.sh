#!/usr/bin/env bash
# exporter_rdma_vs_node_exporter.sh - fabric-exporter's RDMA collector against
# prometheus-node-exporter's infiniband collector, both reading the same sysfs tree: a GPU
# node's eight mlx5 RoCE ports with the kernel's full PMA `counters` and mlx5's
# `hw_counters` (written by this script under a temporary directory; node_exporter reads
# it with --path.sysfs, fabric-exporter with sysfs_root). Scraped alternately with curl
# over loopback; prints medians, series counts, the ratio and the load average.
#
#   scripts/bench/exporter_rdma_vs_node_exporter.sh [ROUNDS] [FABRIC_EXPORTER]
# No privileges; uses build/release/exporters/fabric-exporter unless told otherwise.
set -euo pipefail

ROUNDS=${1:-200}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXPORTER=$(realpath "${2:-$ROOT/build/release/exporters/fabric-exporter}")
for tool in prometheus-node-exporter curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

# shellcheck source=scripts/lib/server_harness.sh
source "$ROOT/scripts/lib/server_harness.sh"

# The PMA counters Linux creates for every port (drivers/infiniband/core/sysfs.c) and the
# hw_counters of an mlx5 RoCE port (ConnectX-6/7, mlx5_ib's names).
PMA=(symbol_error link_error_recovery link_downed port_rcv_errors
  port_rcv_remote_physical_errors port_rcv_switch_relay_errors port_xmit_discards
  port_xmit_constraint_errors port_rcv_constraint_errors local_link_integrity_errors
  excessive_buffer_overrun_errors VL15_dropped port_xmit_data port_rcv_data
  port_xmit_packets port_rcv_packets port_xmit_wait unicast_xmit_packets
  unicast_rcv_packets multicast_xmit_packets multicast_rcv_packets)
HW=(duplicate_request implied_nak_seq_err lifespan local_ack_timeout_err np_cnp_sent
  np_ecn_marked_roce_packets out_of_buffer out_of_sequence packet_seq_err
  req_cqe_error req_cqe_flush_error req_remote_access_errors req_remote_invalid_request
  resp_cqe_error resp_cqe_flush_error resp_local_length_error resp_remote_access_errors
  rnr_nak_retry_err roce_adp_retrans roce_adp_retrans_to roce_slow_restart
  roce_slow_restart_cnps roce_slow_restart_trans rp_cnp_handled rp_cnp_ignored
  rx_atomic_requests rx_dct_connect rx_icrc_encapsulated rx_read_requests
  rx_write_requests)
SYS=$WORK/sys
for i in 0 1 2 3 4 5 6 7; do
  dev=mlx5_$i netdev=ens${i}f0np0
  d=$SYS/class/infiniband/$dev
  p=$d/ports/1
  mkdir -p "$p/counters" "$p/hw_counters" "$p/gid_attrs/ndevs" "$SYS/class/net/$netdev"
  echo MT_0000000838 >"$d/board_id"
  echo 28.39.1002 >"$d/fw_ver"
  echo MT4129 >"$d/hca_type"
  echo Ethernet >"$p/link_layer"
  echo "4: ACTIVE" >"$p/state"
  echo "5: LinkUp" >"$p/phys_state"
  echo "400 Gb/sec (4X NDR)" >"$p/rate"
  echo "$netdev" >"$p/gid_attrs/ndevs/0"
  echo 9000 >"$SYS/class/net/$netdev/mtu"
  for c in "${PMA[@]}"; do echo $((RANDOM * 1000 + i)) >"$p/counters/$c"; done
  for c in "${HW[@]}"; do echo $((RANDOM + i)) >"$p/hw_counters/$c"; done
done

cat >"$WORK/config.yaml" <<YAML
# The RDMA collector alone, as node_exporter runs its infiniband collector alone.
sysfs_root: $SYS
collectors: {pfc: {enabled: false}, dcb: {enabled: false}}
YAML
"$EXPORTER" --config "$WORK/config.yaml" --listen 127.0.0.1:0 2>"$WORK/exporter.log" &
pids+=($!)
prometheus-node-exporter --path.sysfs="$SYS" --collector.disable-defaults \
  --collector.infiniband --web.listen-address=127.0.0.1:0 2>"$WORK/node.log" &
pids+=($!)
fabric_port() { exporter_port "$WORK/exporter.log"; }
# node_exporter 1.5 logs the address it was given (":0"), not the port it bound: ss says.
node_port() { ss -Hltnp | sed -n "s/.*127.0.0.1:\([0-9]*\) .*pid=${pids[1]},.*/\1/p" | head -1; }
has_ports() { [[ -n $(fabric_port) && -n $(node_port) ]]; }
poll 15 has_ports || { cat "$WORK/exporter.log" "$WORK/node.log"; exit 1; }
FPORT=$(fabric_port) NPORT=$(node_port)
F=http://127.0.0.1:$FPORT/metrics N=http://127.0.0.1:$NPORT/metrics
poll 15 curl -sf -o /dev/null "$F"
poll 15 curl -sf -o /dev/null "$N"

# One scrape each to count what they return; the timed ones follow, alternating.
curl -sf "$F" >"$WORK/fabric.txt"
curl -sf "$N" >"$WORK/node.txt"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < ROUNDS; i++)); do
  curl -sf -o /dev/null -w '%{time_total}\n' "$F" >>"$WORK/fabric.times"
  curl -sf -o /dev/null -w '%{time_total}\n' "$N" >>"$WORK/node.times"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
f=$(median <"$WORK/fabric.times")
n=$(median <"$WORK/node.times")
awk -v f="$f" -v n="$n" -v rounds="$ROUNDS" -v cores="$(nproc)" \
    -v fs="$(grep -c '^fabric_rdma_' "$WORK/fabric.txt")" \
    -v ns="$(grep -c '^node_infiniband_' "$WORK/node.txt" || true)" \
    -v nok="$(awk '/^node_scrape_collector_success\{collector="infiniband"\}/ {print $2}' "$WORK/node.txt")" \
    -v lb="$load_before" -v la="$load_after" 'BEGIN {
  printf "8 mlx5 ports (full counters and hw_counters), median of %d alternating scrapes\n", rounds
  printf "  load average %s before, %s after (%d cores)\n", lb, la, cores
  printf "  fabric-exporter (rdma collector):          %7.2f ms, %d fabric_rdma_ series\n", f * 1000, fs
  printf "  node_exporter (infiniband collector only): %7.2f ms, %d node_infiniband_ series (collector success %s)\n", n * 1000, ns, nok
  printf "  ratio fabric-exporter / node_exporter:     %7.2f\n", f / n
}'
