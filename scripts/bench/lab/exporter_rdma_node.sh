#!/usr/bin/env bash
# Runs inside one lab VM for exporter_rdma_vs_node_exporter.sh.
set -euo pipefail
ROUNDS=$1 EXPORTER=$2
WORK=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
poll() { for _ in $(seq 300); do "$@" && return 0; sleep 0.05; done; return 1; }

cat >"$WORK/config.yaml" <<YAML
# The RDMA collector alone, as node_exporter runs its infiniband collector alone.
collectors: {pfc: {enabled: false}, dcb: {enabled: false}, accounting: {enabled: false}, textfile: {enabled: false}}
YAML
"$EXPORTER" --config "$WORK/config.yaml" --listen 127.0.0.1:10900 2>"$WORK/exporter.log" &
pids+=($!)
prometheus-node-exporter --collector.disable-defaults --collector.infiniband \
  --web.disable-exporter-metrics --web.listen-address=127.0.0.1:9100 2>"$WORK/node.log" &
pids+=($!)
poll curl -sf -o /dev/null http://127.0.0.1:10900/healthz
poll curl -sf -o /dev/null http://127.0.0.1:9100/metrics

# One scrape each to show what they return; the timed ones follow, alternating.
curl -sf http://127.0.0.1:10900/metrics >"$WORK/fabric.txt"
curl -sf http://127.0.0.1:9100/metrics >"$WORK/node.txt"
for ((i = 0; i < ROUNDS; i++)); do
  curl -sf -o /dev/null -w '%{time_total}\n' http://127.0.0.1:10900/metrics >>"$WORK/fabric.times"
  curl -sf -o /dev/null -w '%{time_total}\n' http://127.0.0.1:9100/metrics >>"$WORK/node.times"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
f=$(median <"$WORK/fabric.times")
n=$(median <"$WORK/node.times")
awk -v f="$f" -v n="$n" -v rounds="$ROUNDS" -v dev="$FABRIC_LAB_RDMA_DEV" \
    -v fs="$(grep -c '^fabric_rdma_' "$WORK/fabric.txt")" \
    -v ns="$(grep -c '^node_infiniband_' "$WORK/node.txt" || true)" \
    -v nok="$(awk '/^node_scrape_collector_success\{collector="infiniband"\}/ {print $2}' "$WORK/node.txt")" \
    -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  printf "%s in one lab VM, median of %d alternating scrapes, load %s\n", dev, rounds, load
  printf "  fabric-exporter (rdma collector):          %7.2f ms, %d fabric_rdma_ series\n", f * 1000, fs
  printf "  node_exporter (infiniband collector only): %7.2f ms, %d node_infiniband_ series (collector success %s)\n", n * 1000, ns, nok
  printf "  ratio fabric-exporter / node_exporter:     %7.2f\n", f / n
}'
