#!/usr/bin/env bash
# exporter_accounting.sh - fabric-exporter's scrape with per-pod accounting counters
# installed, against `ipset list` of the same sets plus parsing each element's counters
# (what an exporter that runs the ipset program on every scrape does), in the same run;
# with the exporter's resident memory and CPU time per scrape.
#
#   scripts/bench/exporter_accounting.sh [PODS] [ROUNDS] [BACKEND]
#     PODS     pods to account (default 2500: x 2 classes x 2 directions = 10,000 counters,
#              20,000 series; 1250 gives 10,000 series)
#     ROUNDS   alternating timed rounds (default 15)
#     BACKEND  nft or legacy (default nft)
# Root. Everything happens in a network namespace of its own, removed at the end; the
# host's iptables are not touched.
set -euo pipefail

PODS=${1:-2500}
ROUNDS=${2:-15}
BACKEND=${3:-nft}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/lib/accounting_setup.sh
. "$ROOT/scripts/bench/lib/accounting_setup.sh"
accounting_bench_init "$ROOT"

NS=fxbench$$
add_namespace "$NS"
write_pod_records 0 "$PODS"
write_accounting_config "$BACKEND" "$PODS" 30s

echo "installing rules and sets for $PODS pods ($((PODS * 4)) counters, backend $BACKEND)..." >&2
start=$EPOCHREALTIME
ip netns exec "$NS" "$EXPORTER" --config "$WORK/config.yaml" --listen 127.0.0.1:10900 \
  2>"$WORK/exporter.log" &
BACKGROUND_PID=$!
until ip netns exec "$NS" curl -sf -o /dev/null http://127.0.0.1:10900/healthz; do
  kill -0 "$BACKGROUND_PID" 2>/dev/null || { cat "$WORK/exporter.log" >&2; exit 1; }
  sleep 0.2
done
echo "ready after $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s" >&2
series=$(ip netns exec "$NS" curl -sf http://127.0.0.1:10900/metrics | grep -c '^fabric_pod_traffic_')
rules=$(ip netns exec "$NS" "iptables-$BACKEND-save" -t mangle | grep -c -- '-m set')
[[ $series == $((PODS * 8)) && $rules == 4 ]] ||
  { echo "expected $((PODS * 8)) series and 4 set rules, got $series and $rules" >&2; exit 1; }

# The timed loop runs inside the namespace, so `ip netns exec` is not in the figures. The
# exporter's time is curl's own (connection to last byte, as a scraper sees it; curl's
# process start is not the exporter's). The peer reads every set's element counters with
# the ipset program, processes included, and parses them into one line per counter.
cat >"$WORK/loop.sh" <<'LOOP'
rounds=$1 backend=$2 out=$3
for ((r = 0; r < rounds; r++)); do
  exporter=$(curl -sf -o /dev/null -w '%{time_total}' http://127.0.0.1:10900/metrics)
  t0=$EPOCHREALTIME
  n=$(for set in fabric-acct-tx4-0 fabric-acct-rx4-0 fabric-acct-tx4-1 fabric-acct-rx4-1; do
      ipset list "$set"
    done | awk '$2 == "packets" { print $1, $3, $5 }' | wc -l)
  t1=$EPOCHREALTIME
  echo "$exporter $t0 $t1 $n"
done >"$out"
LOOP
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
exporter_child=$(pgrep -P "$BACKGROUND_PID" -x fabric-exporter || echo "$BACKGROUND_PID")
ticks_before=$(cpu_ticks "$exporter_child")
ip netns exec "$NS" bash "$WORK/loop.sh" "$ROUNDS" "$BACKEND" "$WORK/times"
ticks_after=$(cpu_ticks "$exporter_child")
rss_kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$exporter_child/status")
hwm_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$exporter_child/status")
hz=$(getconf CLK_TCK)

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
exp_ms=$(awk '{printf "%.3f\n", $1 * 1000}' "$WORK/times" | median)
ipt_ms=$(awk '{printf "%.3f\n", ($3 - $2) * 1000}' "$WORK/times" | median)
parsed=$(awk 'NR == 1 {print $4}' "$WORK/times")
awk -v pods="$PODS" -v rounds="$ROUNDS" -v backend="$BACKEND" -v e="$exp_ms" -v i="$ipt_ms" \
    -v n="$parsed" -v rss="$rss_kib" -v hwm="$hwm_kib" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
    -v cpu=$((ticks_after - ticks_before)) -v hz="$hz" 'BEGIN {
  printf "per-pod accounting, %d pods = %d counters (%d series), iptables-%s, median of %d rounds, load %s\n",
         pods, pods * 4, pods * 8, backend, rounds, load
  printf "  fabric-exporter scrape (HTTP, ip_set dumps): %8.2f ms\n", e
  printf "  ipset list + parse (%d counters):         %8.2f ms\n", n, i
  printf "  ratio ipset list / fabric-exporter:          %8.1fx\n", i / e
  printf "  fabric-exporter resident memory: %.1f MiB (peak %.1f MiB); CPU %.1f ms per scrape\n",
         rss / 1024, hwm / 1024, cpu * 1000 / hz / rounds
}'
