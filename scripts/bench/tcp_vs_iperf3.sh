#!/usr/bin/env bash
# tcp_vs_iperf3.sh - `fabric-probe tcp` bandwidth against iperf3 between the same two
# network namespaces (a veth pair), alternating runs, medians and their ratio.
#
#   scripts/bench/tcp_vs_iperf3.sh [ROUNDS] [SECONDS] [FABRIC_PROBE_BINARY]
# Needs root (namespaces) and iperf3 (scripts/setup.sh installs it).
set -euo pipefail

ROUNDS=${1:-5}
SECONDS_PER_RUN=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROBE=$(realpath "${3:-$ROOT/build/release/probes/fabric-probe}")
for tool in "$PROBE" "$(command -v iperf3 || true)" "$(command -v jq || true)"; do
  [[ -n $tool && -x $tool ]] || { echo "tcp_vs_iperf3.sh: fabric-probe, iperf3 and jq are needed" >&2; exit 2; }
done

TAG=fkbt$$
WORK=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "${TAG}a" 2>/dev/null || true
  ip netns del "${TAG}b" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "${TAG}a"
ip netns add "${TAG}b"
ip link add "${TAG}x" netns "${TAG}a" type veth peer name "${TAG}y" netns "${TAG}b"
ip -n "${TAG}a" addr add 10.124.0.1/24 dev "${TAG}x"
ip -n "${TAG}b" addr add 10.124.0.2/24 dev "${TAG}y"
ip -n "${TAG}a" link set "${TAG}x" up
ip -n "${TAG}b" link set "${TAG}y" up
ip -n "${TAG}a" link set lo up

# Servers in namespace a; the port file and iperf3's pid file say when each listens.
ip netns exec "${TAG}a" "$PROBE" server --port 0 --port-file "$WORK/port" >/dev/null 2>&1 &
pids+=($!)
ip netns exec "${TAG}a" iperf3 -s -p 5299 -D -I "$WORK/iperf3.pid" >/dev/null
for _ in $(seq 100); do [[ -s $WORK/port && -s $WORK/iperf3.pid ]] && break; sleep 0.05; done
[[ -s $WORK/port && -s $WORK/iperf3.pid ]] || { echo "tcp_vs_iperf3.sh: servers did not start" >&2; exit 2; }
pids+=("$(cat "$WORK/iperf3.pid")")
port=$(cat "$WORK/port")

for ((i = 0; i < ROUNDS; i++)); do
  ip netns exec "${TAG}b" iperf3 -c 10.124.0.1 -p 5299 -t "$SECONDS_PER_RUN" -J |
    jq '.end.sum_received.bits_per_second / 1e9' >>"$WORK/iperf3.gbps"
  ip netns exec "${TAG}b" "$PROBE" tcp 10.124.0.1 --port "$port" --mode bw \
    --duration "${SECONDS_PER_RUN}s" --json | jq '.summary.avg_gbps' >>"$WORK/probe.gbps"
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
iperf=$(median <"$WORK/iperf3.gbps")
probe=$(median <"$WORK/probe.gbps")
awk -v i="$iperf" -v p="$probe" -v n="$ROUNDS" -v s="$SECONDS_PER_RUN" 'BEGIN {
  printf "TCP bandwidth over a veth pair, one stream, median of %d alternating %ds runs\n", n, s
  printf "  iperf3:             %7.2f Gb/s (receiver)\n", i
  printf "  fabric-probe tcp:   %7.2f Gb/s (receiver)\n", p
  printf "  fabric-probe / iperf3: %.2f\n", p / i
}'
