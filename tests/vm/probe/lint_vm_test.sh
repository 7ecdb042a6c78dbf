#!/usr/bin/env bash
# vm tier: fabric-probe lint on a real soft-RoCE node, run inside a lab VM by
#   scripts/lab.sh -- tests/vm/probe/lint_vm_test.sh build/release/probes/fabric-probe
# The VM has rxe0 on its virtio NIC (FABRIC_LAB_NETDEV, FABRIC_LAB_ADDR). Checks, with jq
# on `lint --json`, each verdict against what the kernel itself says:
#   roce_v2_gid         the lab address's RoCE v2 GID passes
#   mtu_match           rxe's active MTU follows the netdev MTU (1500 -> 1024, 9000 -> 4096)
#   pfc                 virtio_net has no DCB: unknown, never fail
#   rdma_netns_mode     shared, as `rdma system show` says; a different expectation warns
#   memlock             as the VM has it (unlimited), and a low limit fails with exit 3
#   rdma_cm_roce_mode   configfs not mounted: unknown; mounted: RoCE v2 passes (rxe supports
#                       only RoCE v2 and refuses a RoCE v1 default, so the v1 verdict is
#                       covered by the unit tests' fixture)
#   gpu_nic_distance    no GPU in the lab: unknown; --gpu 0 is an error (exit 2); --interface
#                       finds rxe0 through its GID table
# and `topo` on the same node: rxe0 listed with its netdev and RoCE v2 GID but no PCI
# function (it is a virtual device: /sys/class/infiniband/rxe0 has no `device` link), no GPU.
set -euo pipefail

PROBE=$(realpath "${1:?usage: lint_vm_test.sh FABRIC_PROBE_BINARY}")
DEV=${FABRIC_LAB_RDMA_DEV:?run through scripts/lab.sh}
NETDEV=${FABRIC_LAB_NETDEV:?run through scripts/lab.sh}
ADDR=${FABRIC_LAB_ADDR:?run through scripts/lab.sh}
ADDR=${ADDR%/*}
WORK=$(mktemp -d)
failures=0
cleanup() {
  ip link set "$NETDEV" mtu 1500 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }

# lint [ARGS...] -> JSON in $WORK/out, status in $rc
lint() {
  rc=0
  "$PROBE" lint --json "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
}
# verdict ID SUBJECT -> the check's verdict ("" when absent)
verdict() {
  jq -r --arg id "$1" --arg s "$2" '.checks[] | select(.id == $id and .subject == $s) | .verdict' \
    "$WORK/out" 2>/dev/null || true
}
message() {
  jq -r --arg id "$1" --arg s "$2" '.checks[] | select(.id == $id and .subject == $s) | .message' \
    "$WORK/out" 2>/dev/null || true
}
# expect ID SUBJECT VERDICT WHAT
expect() {
  local got
  got=$(verdict "$1" "$2")
  if [[ $got == "$3" ]]; then pass "$4: $1 $2 $3"; else fail "$4: $1 $2 is '$got': $(message "$1" "$2")"; fi
}
# The exit status must say whether a check failed.
expect_status_matches() {
  local fails
  fails=$(jq '[.checks[] | select(.verdict == "fail")] | length' "$WORK/out" 2>/dev/null || echo unreadable)
  if { [[ $fails == 0 ]] && [[ $rc == 0 ]]; } || { [[ $fails =~ ^[1-9] ]] && [[ $rc == 3 ]]; }; then
    pass "$1: exit $rc with $fails failed checks"
  else
    fail "$1: exit $rc with $fails failed checks: $(cat "$WORK/err")"
  fi
}
active_mtu() { ibv_devinfo -d "$DEV" | awk '/active_mtu:/ {print $2; exit}'; }

# --- the node as the lab made it ---------------------------------------------------------
lint
if jq -e '.schema_version == 1 and (.checks | length) >= 6' "$WORK/out" >/dev/null; then
  pass "JSON document with schema_version 1"
else
  fail "lint --json (exit $rc): $(cat "$WORK/out" "$WORK/err")"
fi
expect_status_matches "as booted"
expect roce_ports node pass "rxe0 is a RoCE port"
expect roce_v2_gid "$NETDEV $ADDR" pass "the lab address has its RoCE v2 GID"
gid_index=${FABRIC_LAB_GID_INDEX:-}
if [[ -n $gid_index ]] && [[ $(message roce_v2_gid "$NETDEV $ADDR") == *"index $gid_index ::ffff:$ADDR"* ]]; then
  pass "the GID check names index $gid_index, as the lab found it"
else
  fail "GID index: lab says '$gid_index', lint says: $(message roce_v2_gid "$NETDEV $ADDR")"
fi

netdev_mtu=$(cat "/sys/class/net/$NETDEV/mtu")
if [[ $netdev_mtu == 1500 ]] && [[ $(active_mtu) == 1024 ]]; then
  expect mtu_match "$DEV/1 $NETDEV" pass "rxe active MTU 1024 under a 1500 netdev"
else
  fail "lab assumptions: $NETDEV MTU $netdev_mtu, $DEV active MTU $(active_mtu)"
fi
if [[ $(message mtu_match "$DEV/1 $NETDEV") == *"RoCE active MTU 1024, $NETDEV MTU 1500"* ]]; then
  pass "the MTU check names both MTUs"
else
  fail "mtu message: $(message mtu_match "$DEV/1 $NETDEV")"
fi

expect pfc_on_roce_priority "$NETDEV" unknown "virtio_net has no DCB"

if rdma system show | grep -q 'netns shared'; then
  expect rdma_netns_mode rdma pass "netns mode shared, as rdma system says"
  [[ $(message rdma_netns_mode rdma) == *"mode shared"* ]] && pass "message says shared" ||
    fail "netns message: $(message rdma_netns_mode rdma)"
else
  fail "rdma system show: $(rdma system show 2>&1)"
fi

if [[ $(ulimit -l) == unlimited ]]; then
  expect memlock node pass "memlock unlimited in the lab"
  [[ $(message memlock node) == *"soft unlimited"* ]] && pass "memlock message says unlimited" ||
    fail "memlock message: $(message memlock node)"
else
  fail "the lab runs commands with memlock unlimited, this one has $(ulimit -l) KiB"
fi

# --- live changes --------------------------------------------------------------------------
# rxe follows a netdev MTU change: 9000 - 80 header bytes -> RoCE MTU 4096.
ip link set "$NETDEV" mtu 9000
lint
if [[ $(active_mtu) == 4096 ]]; then
  expect mtu_match "$DEV/1 $NETDEV" pass "after mtu 9000, active 4096"
  [[ $(message mtu_match "$DEV/1 $NETDEV") == *"RoCE active MTU 4096, $NETDEV MTU 9000"* ]] &&
    pass "lint reads the new MTUs" || fail "mtu message: $(message mtu_match "$DEV/1 $NETDEV")"
else
  fail "rxe did not follow the netdev MTU: active $(active_mtu)"
fi
ip link set "$NETDEV" mtu 1500

lint --expect-netns-mode exclusive
expect rdma_netns_mode rdma warn "expecting exclusive on a shared node"
expect_status_matches "netns expectation"

# A memlock limit of 1 MiB in a subshell: memlock fails and the exit status is 3.
rc=0
(ulimit -l 1024 && exec "$PROBE" lint --json) >"$WORK/out" 2>"$WORK/err" || rc=$?
expect memlock node fail "memlock 1 MiB"
if [[ $rc == 3 ]]; then pass "exit 3 when a check fails"; else fail "exit $rc with memlock 1 MiB"; fi
[[ $(message memlock node) == *"soft 1 MiB"* ]] && pass "memlock message says 1 MiB" ||
  fail "memlock message: $(message memlock node)"

# RDMA-CM's defaults live in configfs, which the lab does not mount.
if ! mountpoint -q /sys/kernel/config; then
  lint
  expect rdma_cm_roce_mode "$DEV" unknown "configfs not mounted"
fi
modprobe rdma_cm 2>/dev/null || true
modprobe configfs 2>/dev/null || true
if ! mountpoint -q /sys/kernel/config; then mount -t configfs none /sys/kernel/config; fi
lint
expect rdma_cm_roce_mode "$DEV" pass "rdma_cm defaults to RoCE v2"
# lint made the configfs folder to read it; it removes what it made.
if [[ ! -e /sys/kernel/config/rdma_cm/$DEV ]]; then
  pass "lint leaves configfs as it found it"
else
  fail "lint left /sys/kernel/config/rdma_cm/$DEV behind"
fi

# --- the GPU-NIC check and topo ------------------------------------------------------------
lint
expect gpu_nic_distance node unknown "no GPU in the lab"
[[ $(message gpu_nic_distance node) == *"no GPU on this node"* ]] && pass "the check says why" ||
  fail "gpu_nic message: $(message gpu_nic_distance node)"
lint --interface "$NETDEV"
if [[ $rc == 0 || $rc == 3 ]]; then pass "--interface $NETDEV names rxe0's netdev (exit $rc)"; else
  fail "--interface $NETDEV: exit $rc: $(cat "$WORK/err")"; fi
lint --interface nosuch0
if [[ $rc == 2 ]] && grep -q 'nosuch0' "$WORK/err"; then pass "an unknown --interface is exit 2"; else
  fail "--interface nosuch0: exit $rc: $(cat "$WORK/err")"; fi
lint --gpu 0
if [[ $rc == 2 ]] && grep -q 'no GPU on this node' "$WORK/err"; then pass "--gpu 0 without GPU is exit 2"; else
  fail "--gpu 0: exit $rc: $(cat "$WORK/err")"; fi

rc=0
"$PROBE" topo --json >"$WORK/topo" 2>"$WORK/err" || rc=$?
topo_is() { jq -e --arg dev "$DEV" --arg nd "$NETDEV" --arg gid "::ffff:$ADDR" "$1" "$WORK/topo" >/dev/null 2>&1; }
if [[ $rc == 0 ]] && topo_is '.schema_version == 1 and (.gpus | length) == 0'; then
  pass "topo --json: exit 0, no GPU"
else
  fail "topo --json (exit $rc): $(cat "$WORK/topo" "$WORK/err")"
fi
if topo_is '.nics | map(select(.rdma_device == $dev)) | length == 1'; then pass "topo lists $DEV"; else
  fail "topo nics: $(jq -c .nics "$WORK/topo")"; fi
if topo_is '.nics[] | select(.rdma_device == $dev) | .pci_address == null and .numa_node == null'; then
  pass "$DEV has no PCI function"
else
  fail "$DEV's PCI function: $(jq -c '.nics[0]' "$WORK/topo")"
fi
if topo_is '.nics[] | select(.rdma_device == $dev) | .netdevs == [$nd] and .ports[0].state == "ACTIVE"
            and (.ports[0].roce_v2_gids | map(.gid) | index($gid) != null)'; then
  pass "$DEV on $NETDEV, ACTIVE, with the RoCE v2 GID ::ffff:$ADDR"
else
  fail "$DEV's ports: $(jq -c '.nics[0]' "$WORK/topo")"
fi
if topo_is '.distances.NIC0.NIC0 == "X"'; then pass "the matrix has $DEV alone"; else
  fail "distances: $(jq -c .distances "$WORK/topo")"; fi
rc=0
text=$("$PROBE" topo 2>"$WORK/err") || rc=$?
if [[ $rc == 0 ]] && [[ $text == *"no GPU found"* ]] &&
  [[ $text == *"$DEV"*"software RDMA device, no PCI function  $NETDEV"* ]]; then
  pass "topo's text says no GPU and shows $DEV as a software device"
else
  fail "topo text (exit $rc): $text $(cat "$WORK/err")"
fi

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all lint checks passed"
