#!/usr/bin/env bash
# accounting_packet_cost.sh - what per-pod accounting costs each forwarded packet, at
# PODS pods, against no accounting, in the same run.
#
# Two pod namespaces route through a "node" namespace (veth pairs, forwarding on), as a
# node routes its pods' primary-interface traffic. fabric-exporter installs its rules and
# sets there for PODS pods (the two senders among them, 10.0.0.0/8 a class), then stops:
# rules and sets stay. Each round then runs iperf3 UDP (64-byte datagrams, unlimited rate)
# from one pod to the other twice, back to back, with the accounting's two jump rules out
# of PREROUTING/POSTROUTING and in, in alternating order so that drift in machine load hits
# both alike. The datagrams sent per second give ns per packet for each: a veth delivers
# in the sender's own system call (the node's forwarding and netfilter run there, in
# softirq), so the sender's rate is what the whole path costs, while the receiving
# iperf3, slower than that, drops what it cannot read. The cost is the difference, per
# round (paired), printed as the median with the spread of rounds.
# Every packet of the accounted run passes both chains (the sender's tx and the receiver's
# rx, each a set lookup), as on a node.
#
#   scripts/bench/accounting_packet_cost.sh [PODS] [ROUNDS] [SECONDS] [BACKEND]
#     PODS     pods in the sets (default 2500)
#     ROUNDS   paired rounds (default 20)
#     SECONDS  length of each iperf3 run (default 3)
#     BACKEND  nft or legacy (default nft)
# Root, iperf3. Everything happens in namespaces of its own, removed at the end; the host's
# iptables are not touched. On a busy machine the figures are noise: run it on a quiet one.
set -euo pipefail

PODS=${1:-2500}
ROUNDS=${2:-20}
SECONDS_PER_RUN=${3:-3}
BACKEND=${4:-nft}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/lib/accounting_setup.sh
. "$ROOT/scripts/bench/lib/accounting_setup.sh"
accounting_bench_init "$ROOT"
command -v iperf3 >/dev/null || { echo "needs iperf3 (scripts/setup.sh)" >&2; exit 1; }
((PODS >= 2 && PODS <= 60000)) || { echo "PODS must be 2..60000" >&2; exit 1; }

TAG=fkpkt$$
NODE=${TAG}n A=${TAG}a B=${TAG}b
for ns in "$NODE" "$A" "$B"; do add_namespace "$ns"; done
ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1
link() { # suffix pod node_ip pod_ip
  ip link add "${TAG}$1" netns "$NODE" type veth peer name eth0 netns "$2"
  ip -n "$NODE" addr add "$3/24" dev "${TAG}$1"
  ip -n "$NODE" link set "${TAG}$1" up
  ip -n "$2" addr add "$4/24" dev eth0
  ip -n "$2" link set eth0 up
  ip -n "$2" route add default via "$3"
}
link a "$A" 10.66.1.1 10.66.1.2
link b "$B" 10.66.2.1 10.66.2.2

write_pod_record sender 10.66.1.2
write_pod_record receiver 10.66.2.2
write_pod_records 2 "$PODS"
write_accounting_config "$BACKEND" "$PODS" 60s
ip netns exec "$NODE" "$EXPORTER" --config "$WORK/config.yaml" --once >"$WORK/once.prom" 2>"$WORK/exporter.log" ||
  { cat "$WORK/exporter.log" >&2; exit 1; }
grep -q '^fabric_accounting_active 1$' "$WORK/once.prom" || { cat "$WORK/exporter.log" >&2; exit 1; }
members=$(ip netns exec "$NODE" ipset list fabric-acct-tx4-1 2>/dev/null | grep -c ' packets ' || true)
[[ -z $members || $members == "$PODS" ]] ||
  { echo "expected $PODS addresses in the set, found $members" >&2; exit 1; }

save=iptables-$BACKEND-save restore=iptables-$BACKEND-restore
jumps=$(ip netns exec "$NODE" "$save" -t mangle | grep -E '^-A (PREROUTING|POSTROUTING) .*-j FABRIC-ACCT-' || true)
[[ $(wc -l <<<"$jumps") == 2 ]] || { echo "the accounting's jump rules are missing" >&2; exit 1; }
set_jumps() { # on|off
  local verb=-A
  [[ $1 == off ]] && verb=-D
  # shellcheck disable=SC2001 # ^ anchors each rule's line, which ${jumps//} cannot
  { echo '*mangle'; sed "s/^-A /$verb /" <<<"$jumps"; echo COMMIT; } |
    ip netns exec "$NODE" "$restore" --noflush -w 10
}

ip netns exec "$B" iperf3 -s -B 10.66.2.2 >/dev/null 2>&1 &
BACKGROUND_PID=$!
for _ in $(seq 50); do
  timeout 10 ip netns exec "$A" iperf3 -c 10.66.2.2 -u -b 1M -t 1 -l 64 >/dev/null 2>&1 && break
  sleep 0.1
done
# ns per datagram sent in one iperf3 run.
run() {
  timeout $((SECONDS_PER_RUN + 20)) ip netns exec "$A" \
    iperf3 -c 10.66.2.2 -u -b 0 -l 64 -t "$SECONDS_PER_RUN" -J |
    jq -r '.end.sum | .seconds * 1e9 / .packets'
}
echo "accounting of $PODS pods, iptables-$BACKEND, $ROUNDS paired rounds of ${SECONDS_PER_RUN}s..." >&2
state=on
for ((r = 0; r < ROUNDS; r++)); do
  # Alternate which run goes first.
  if ((r % 2)); then order="on off"; else order="off on"; fi
  for mode in $order; do
    [[ $mode == "$state" ]] || { set_jumps "$mode"; state=$mode; }
    if [[ $mode == on ]]; then ns_on=$(run); else ns_off=$(run); fi
  done
  echo "$ns_off $ns_on"
done >"$WORK/rounds"
[[ $state == on ]] || set_jumps on

counted=$(ip netns exec "$NODE" ipset list fabric-acct-tx4-1 2>/dev/null | awk '$1 == "10.66.1.2" {print $3}' || true)
awk -v pods="$PODS" -v rounds="$ROUNDS" -v backend="$BACKEND" -v counted="${counted:-?}" \
    -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '
  { off[NR] = $1; on[NR] = $2; d[NR] = $2 - $1 }
  function median(a, n,   i, j, t, s) {
    for (i = 1; i <= n; i++) s[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
    return (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
  }
  function minimum(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
  function maximum(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
  END {
    printf "per-packet cost of per-pod accounting, %d pods, iptables-%s, %d paired rounds, load %s\n",
           pods, backend, rounds, load
    printf "  64-byte datagram sent and forwarded, no accounting: %8.1f ns (median)\n", median(off, NR)
    printf "  64-byte datagram sent and forwarded, accounting on: %8.1f ns (median)\n", median(on, NR)
    printf "  cost per packet (paired):                    %8.1f ns median, rounds %.1f .. %.1f\n",
           median(d, NR), minimum(d, NR), maximum(d, NR)
    printf "  ratio accounting / none:                     %8.3f\n", median(on, NR) / median(off, NR)
    printf "  the sender counted by its set element:       %s packets\n", counted
  }' "$WORK/rounds"
