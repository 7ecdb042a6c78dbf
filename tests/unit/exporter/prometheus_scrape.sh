#!/usr/bin/env bash
# A real Prometheus server (Debian's prometheus) scrapes the built fabric-exporter on
# loopback; PromQL through the HTTP API must return the series the fixtures say, and
# promtool must find a full scrape clean.
#   prometheus_scrape.sh FABRIC_EXPORTER tests/data/exporter
# Needs no privileges. Every wait polls a condition and is bounded.
set -euo pipefail

EXPORTER=$(realpath "${1:?usage: prometheus_scrape.sh FABRIC_EXPORTER DATA_DIR}")
DATA=$(realpath "${2:?usage: prometheus_scrape.sh FABRIC_EXPORTER DATA_DIR}")
for tool in prometheus promtool curl jq; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/setup.sh installs it)"; exit 1; }
done

# shellcheck source=scripts/lib/server_harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/server_harness.sh"
failures=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }

mkdir -p "$WORK/textfile"
cat >"$WORK/textfile/nccltest.prom" <<'PROM'
# HELP fabric_nccltest_busbw_bytes_per_second All-reduce bus bandwidth.
# TYPE fabric_nccltest_busbw_bytes_per_second gauge
fabric_nccltest_busbw_bytes_per_second{op="allreduce",size="1073741824"} 1.875e+10
PROM
# Hostile textfiles: the exporter's own families, a built-in one, and a file from the
# future. Each is refused whole and counted; the scrape stays one promtool accepts.
cat >"$WORK/textfile/forged_self.prom" <<'PROM'
fabric_exporter_collector_success{collector="rdma"} 1
fabric_exporter_config_last_reload_successful 1
fabric_textfile_files_skipped{reason="malformed"} 9
PROM
echo 'fabric_nccl_processes 7' >"$WORK/textfile/forged_builtin.prom"
echo 'fabric_from_the_future 1' >"$WORK/textfile/future.prom"
touch -d '+1 day' "$WORK/textfile/future.prom"
cat >"$WORK/exporter.yaml" <<YAML
sysfs_root: $DATA/sysfs/mlx5
collectors:
  pfc: {netdevs: [lo]}
  dcb: {netdevs: [lo]}
  textfile: {directory: $WORK/textfile}
YAML

# The exporter picks a free port itself and says which in its log.
"$EXPORTER" --config "$WORK/exporter.yaml" --listen 127.0.0.1:0 --log-level info \
  2>"$WORK/exporter.log" &
pids+=($!)
has_port() { [[ -n $(exporter_port "$WORK/exporter.log") ]]; }
poll 30 has_port || { cat "$WORK/exporter.log"; exit 1; }
PORT=$(exporter_port "$WORK/exporter.log")

curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/scrape.txt"
if promtool check metrics <"$WORK/scrape.txt" >"$WORK/promtool.txt" 2>&1; then
  pass "promtool check metrics: a full scrape is clean ($(grep -c '^fabric_' "$WORK/scrape.txt") series)"
else
  fail "promtool check metrics: $(cat "$WORK/promtool.txt")"
fi
for line in 'fabric_textfile_files_skipped{reason="conflict"} 2' \
  'fabric_textfile_files_skipped{reason="future_mtime"} 1'; do
  if grep -qxF "$line" "$WORK/scrape.txt"; then
    pass "hostile textfiles refused and counted: $line"
  else
    fail "hostile textfiles: no '$line' in the scrape"
  fi
done
if grep -q '^fabric_from_the_future\|^fabric_nccl_processes' "$WORK/scrape.txt"; then
  fail "a refused textfile's series was served"
fi

# Prometheus on a port of its own; another process may take the one we pick, so retry.
for attempt in 1 2 3 4 5; do
  PROM_PORT=$((20000 + RANDOM % 20000))
  cat >"$WORK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: fabric
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
YAML
  rm -rf "$WORK/tsdb"
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn 2>"$WORK/prometheus.log" &
  prom_pid=$!
  if poll 60 curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" -o /dev/null; then
    pids+=("$prom_pid")
    break
  fi
  kill "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  PROM_PORT=
  grep -q 'address already in use' "$WORK/prometheus.log" || break
done
[[ -n ${PROM_PORT:-} ]] || { echo "prometheus did not become ready:"; cat "$WORK/prometheus.log"; exit 1; }
pass "prometheus ready on 127.0.0.1:$PROM_PORT"

# query PROMQL -> the first result's value ("" when there is none yet)
query() {
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    jq -r '.data.result[0].value[1] // empty'
}
# expect PROMQL VALUE WHAT: polls until the query returns VALUE (scrapes take a moment).
expect() {
  local got=""
  answers() { [[ $(query "$1") == "$2" ]]; }
  poll 30 answers "$1" "$2" && { pass "$3: $1 = $2"; return; }
  got=$(query "$1")
  fail "$3: $1 = '$got', expected $2"
}
expect 'up{job="fabric"}' 1 "the target is up"
expect 'fabric_rdma_port_data_bytes_total{device="mlx5_0",port="1",direction="tx"}' 1000000000 \
  "port_xmit_data in bytes"
expect 'fabric_rdma_cnp_sent_total{device="mlx5_0"}' 12 "a RoCE hw counter"
expect 'fabric_nccltest_busbw_bytes_per_second{size="1073741824"}' 18750000000 "a textfile series"
expect 'fabric_exporter_collector_success{collector="rdma"}' 1 "self metrics"
expect 'count(fabric_exporter_build_info)' 1 "build info"
# Prometheus parsed the whole exposition (a wrong content type or a parse error fails it).
expect 'scrape_samples_scraped{job="fabric"} > bool 50' 1 "samples scraped"

if ((failures)); then
  echo "$failures check(s) failed"
  echo "--- exporter log"; cat "$WORK/exporter.log"
  exit 1
fi
echo "all prometheus checks passed"
