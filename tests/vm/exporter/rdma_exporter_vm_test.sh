#!/usr/bin/env bash
# vm tier: fabric-exporter's RDMA collector on a real soft-RoCE device, run inside a lab VM
#   scripts/lab.sh -- tests/vm/exporter/rdma_exporter_vm_test.sh \
#       build/release/exporters/fabric-exporter build/release/probes/fabric-probe
# Scrapes /metrics before and after a `fabric-probe bw` run over rxe0 and checks what the
# kernel says moved: rxe has hw_counters (sent_pkts, rcvd_pkts) but no port counters, so
# the packets must have risen by at least bytes / MTU and the absence of byte counters must
# be reported as such. Also: the active MTU against ibv_devinfo, DCB on virtio_net
# reported unsupported, and promtool on the scrape.
set -euo pipefail

EXPORTER=$(realpath "${1:?usage: rdma_exporter_vm_test.sh FABRIC_EXPORTER FABRIC_PROBE}")
PROBE=$(realpath "${2:?usage: rdma_exporter_vm_test.sh FABRIC_EXPORTER FABRIC_PROBE}")
DEV=${FABRIC_LAB_RDMA_DEV:?run through scripts/lab.sh}
NETDEV=${FABRIC_LAB_NETDEV:?run through scripts/lab.sh}
ADDR=${FABRIC_LAB_ADDR%/*}
SIZE=65536 ITERS=500
WORK=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }
poll() { # SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

cat >"$WORK/config.yaml" <<YAML
collectors:
  pfc: {netdevs: [$NETDEV]}
  dcb: {netdevs: [$NETDEV]}
YAML
"$EXPORTER" --config "$WORK/config.yaml" --listen 127.0.0.1:0 --log-level info 2>"$WORK/exporter.log" &
pids+=($!)
port_of() { sed -n 's/^fabric-exporter: listening on .*:\([0-9]*\)$/\1/p' "$WORK/exporter.log"; }
has_port() { [[ -n $(port_of) ]]; }
poll 30 has_port || { cat "$WORK/exporter.log"; exit 1; }
PORT=$(port_of)
scrape() { curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/$1"; }
# series FILE 'name{labels}' -> its value, "" when absent
series() { awk -v s="$2" '$1 == s {print $2}' "$WORK/$1"; }

scrape before
"$PROBE" server --port 0 --port-file "$WORK/agent_port" >/dev/null 2>"$WORK/agent.log" &
pids+=($!)
has_agent() { [[ -s $WORK/agent_port ]]; }
poll 30 has_agent || { cat "$WORK/agent.log"; exit 1; }
"$PROBE" bw "$ADDR" -p "$(cat "$WORK/agent_port")" --op write -s "$SIZE" -n "$ITERS" --json \
  >"$WORK/bw.json"
moved=$((SIZE * ITERS))
scrape after

mtu=$(series after "fabric_rdma_port_active_mtu_bytes{device=\"$DEV\",port=\"1\"}")
kernel_mtu=$(ibv_devinfo -d "$DEV" | awk '/active_mtu:/ {print $2; exit}')
[[ -n $mtu && $mtu == "$kernel_mtu" ]] && pass "active MTU $mtu, as ibv_devinfo says" ||
  fail "active MTU '$mtu', ibv_devinfo says $kernel_mtu"

for direction in tx rx; do
  name="fabric_rdma_port_packets_total{device=\"$DEV\",port=\"1\",direction=\"$direction\"}"
  b=$(series before "$name")
  a=$(series after "$name")
  if [[ -n $b && -n $a ]] && ((a - b >= moved / kernel_mtu)); then
    pass "$direction packets rose by $((a - b)) for $moved bytes (at least $((moved / kernel_mtu)))"
  else
    fail "$direction packets: before '$b', after '$a', expected a rise of $((moved / kernel_mtu))"
  fi
done

[[ $(series after "fabric_rdma_port_counters_present{device=\"$DEV\",port=\"1\",directory=\"counters\"}") == 0 ]] &&
  pass "rxe has no port counters, and the scrape says so" || fail "counters_present for counters"
[[ $(series after "fabric_rdma_port_counters_present{device=\"$DEV\",port=\"1\",directory=\"hw_counters\"}") == 1 ]] &&
  pass "rxe has hw_counters" || fail "counters_present for hw_counters"
grep -q "^fabric_rdma_port_data_bytes_total{device=\"$DEV\"" "$WORK/after" &&
  fail "byte counters for $DEV, which has none" || pass "no byte series made up for rxe"
[[ $(series after "fabric_rdma_port_state{device=\"$DEV\",port=\"1\"}") == 4 ]] &&
  pass "port ACTIVE" || fail "port state"
[[ $(series after "fabric_exporter_collector_errors_total{collector=\"rdma\"}") == 0 ]] &&
  pass "no RDMA collector errors" || fail "RDMA collector errors: $(grep 'collector="rdma"' "$WORK/after")"
[[ $(series after "fabric_dcb_supported{netdev=\"$NETDEV\"}") == 0 ]] &&
  pass "virtio_net has no DCB: unsupported, not an error" || fail "DCB on $NETDEV"
[[ $(series after "fabric_exporter_collector_errors_total{collector=\"dcb\"}") == 0 ]] &&
  pass "no DCB collector errors" || fail "DCB collector errors"
if promtool check metrics <"$WORK/after" >"$WORK/promtool" 2>&1; then
  pass "promtool check metrics"
else
  fail "promtool: $(cat "$WORK/promtool")"
fi

if ((failures)); then
  echo "$failures check(s) failed"
  grep "device=\"$DEV\"" "$WORK/after" || true
  exit 1
fi
echo "all exporter checks passed on $DEV"
