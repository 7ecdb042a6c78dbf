#!/usr/bin/env bash
# vm tier: fabric-cni on a real soft-RoCE device, run inside a lab VM by
#   scripts/lab.sh -- tests/vm/cni/cni_vm_test.sh build/release/cni/fabric-cni \
#                     [build/release/probes/fabric-probe]
# The VM has rxe0 on eth0 (10.77.0.10/24). Checks:
#   shared mode   - the pod gets its macvlan, and the RoCE v2 GID for the pod's address
#                   appears on rxe0 with the pod's interface as netdev, at the index the
#                   plugin reports; DEL removes interface and GID. With fabric-probe:
#                   RDMA between two such pods picks each pod's GID and either works or
#                   fails with the documented soft-RoCE hint.
#   exclusive     - with the RDMA subsystem in exclusive netns mode, moving rxe0 into
#                   the pod either works (and DEL brings it back) or is refused by the
#                   kernel with a clear error and nothing moved: eth0 keeps its name,
#                   address and state.
#   refusal       - exclusive mode while the RDMA netns mode is shared fails before
#                   touching anything, naming the mode.
#   survivor      - the virtio NIC (without rxe0) moved into a pod whose namespace is then
#                   destroyed comes back, and DEL (with or without the record) or GC
#                   restores its name, MTU and alias and releases its address.
set -euo pipefail

CNI=$(realpath "${1:?usage: cni_vm_test.sh FABRIC_CNI_BINARY [FABRIC_PROBE_BINARY]}")
PROBE=${2:+$(realpath "$2")}
WORK=$(mktemp -d)
failures=0
cleanup() {
  ip netns del fkpod1 2>/dev/null || true
  ip netns del fkpod2 2>/dev/null || true
  ip netns del fkpod3 2>/dev/null || true
  for pod in fkpod4 fkpod5 fkpod6; do ip netns del "$pod" 2>/dev/null || true; done
  rdma system set netns shared 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; failures=$((failures + 1)); }

# run_cni COMMAND NETNS IFNAME CONFIG_FILE -> stdout in $WORK/out, status in $rc
run_cni() {
  rc=0
  CNI_COMMAND=$1 CNI_CONTAINERID=vmtest-$2 CNI_NETNS=/var/run/netns/$2 CNI_IFNAME=$3 \
    CNI_PATH=/usr/lib/cni CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=lab;K8S_POD_NAME=$2" \
    "$CNI" <"$4" >"$WORK/out" 2>"$WORK/err" || rc=$?
}

# --- shared mode on rxe0 ----------------------------------------------------------------
ip netns add fkpod1
cat >"$WORK/shared.json" <<JSON
{"cniVersion": "1.1.0", "name": "roce", "type": "fabric-cni", "rdmaDevice": "rxe0",
 "gidCheck": "require", "gidTimeoutMs": 10000, "stateDir": "$WORK/state",
 "ipam": {"type": "static", "addresses": [{"address": "10.77.0.200/24"}]},
 "runtimeConfig": {"CNIDeviceInfoFile": "$WORK/devinfo.json"}}
JSON
run_cni ADD fkpod1 net1 "$WORK/shared.json"
if [[ $rc == 0 ]]; then pass "shared ADD on rxe0"; else fail "shared ADD: $(cat "$WORK/out" "$WORK/err")"; fi
cp "$WORK/out" "$WORK/add-result.json"

if ip -n fkpod1 -o -4 addr show dev net1 | grep -q '10.77.0.200/24'; then
  pass "the pod has net1 with 10.77.0.200/24"
else
  fail "net1 in the pod: $(ip -n fkpod1 addr)"
fi

state="$WORK/state/networks/roce/vmtest-fkpod1:net1.json"
index=$(jq -r '.gid_index' "$state" 2>/dev/null || echo null)
reported=$(jq -r '.interfaces[0].gidIndex' "$WORK/add-result.json" 2>/dev/null || true)
ports=/sys/class/infiniband/rxe0/ports/1
if [[ $index != null ]] &&
   [[ $(cat "$ports/gids/$index") == "0000:0000:0000:0000:0000:ffff:0a4d:00c8" ]] &&
   [[ $(cat "$ports/gid_attrs/ndevs/$index") == net1 ]] &&
   [[ $(cat "$ports/gid_attrs/types/$index") == "RoCE v2" ]]; then
  pass "RoCE v2 GID ::ffff:10.77.0.200 on rxe0 at index $index with netdev net1"
else
  fail "GID at recorded index '$index': $(cat "$ports/gids/$index" "$ports/gid_attrs/ndevs/$index" 2>&1)"
fi
if [[ $reported == "$index" ]] &&
   [[ $(jq -r '.interfaces[0].rdmaDevice' "$WORK/add-result.json") == rxe0 ]]; then
  pass "the result reports rdmaDevice rxe0 and the same GID index $index"
else
  fail "result reports GID index $reported, state and sysfs say $index"
fi
if [[ $(jq -r '.pci["rdma-device"]' "$WORK/devinfo.json" 2>/dev/null) == rxe0 ]]; then
  pass "device-info names rdma-device rxe0"
else
  fail "device-info: $(cat "$WORK/devinfo.json" 2>&1)"
fi

jq --slurpfile prev "$WORK/add-result.json" '. + {prevResult: $prev[0]}' \
  "$WORK/shared.json" >"$WORK/check.json"
run_cni CHECK fkpod1 net1 "$WORK/check.json"
if [[ $rc == 0 ]]; then pass "CHECK passes, GID included"; else fail "CHECK: $(cat "$WORK/out")"; fi

# Pod to pod over RDMA: fabric-probe in each pod picks the RoCE v2 GID whose netdev is the
# pod's interface. rxe on the lab's kernel cannot send from a pod's namespace; a RoCE NIC
# can. Either outcome is fine, a silent or unexplained failure is not.
if [[ -n $PROBE ]]; then
  ip netns add fkpod3
  jq '.ipam.addresses[0].address = "10.77.0.202/24" | del(.runtimeConfig)' \
    "$WORK/shared.json" >"$WORK/pod3.json"
  run_cni ADD fkpod3 net1 "$WORK/pod3.json"
  ip netns exec fkpod3 "$PROBE" server --port 0 --port-file "$WORK/agent.port" \
    >/dev/null 2>&1 &
  agent=$!
  for _ in $(seq 100); do [[ -s $WORK/agent.port ]] && break; sleep 0.1; done
  bw_rc=0
  ip netns exec fkpod1 "$PROBE" bw 10.77.0.202 -p "$(cat "$WORK/agent.port")" -n 50 \
    --timeout 5s >"$WORK/bw.out" 2>&1 || bw_rc=$?
  kill "$agent" && wait "$agent" 2>/dev/null || true
  if [[ $bw_rc == 0 ]] && grep -q '10.77.0.200 on net1' "$WORK/bw.out"; then
    pass "RDMA from pod to pod over the pods' own GIDs"
  elif [[ $bw_rc == 2 ]] && grep -q "no route from the GID's netdev" "$WORK/bw.out"; then
    pass "RDMA from a pod on rxe: the kernel's refusal comes with its hint (exit 2)"
  else
    fail "RDMA from pod to pod (rc=$bw_rc): $(cat "$WORK/bw.out")"
  fi
  run_cni DEL fkpod3 net1 "$WORK/pod3.json"
  ip netns del fkpod3
fi

run_cni DEL fkpod1 net1 "$WORK/shared.json"
gid_gone=1
for n in $(ls "$ports/gid_attrs/ndevs"); do
  [[ $(cat "$ports/gid_attrs/ndevs/$n" 2>/dev/null) == net1 ]] && gid_gone=0
done
if [[ $rc == 0 ]] && ! ip -n fkpod1 link show net1 >/dev/null 2>&1 && [[ $gid_gone == 1 ]] &&
   [[ ! -e $state ]] && [[ ! -e $WORK/devinfo.json ]]; then
  pass "DEL removes interface, GID, state and device-info"
else
  fail "DEL (rc=$rc): $(cat "$WORK/out") gid_gone=$gid_gone"
fi

# A GID that cannot appear: gidTimeoutMs elapses under "require" and ADD leaves nothing.
jq '.gidTimeoutMs = 300 | .master = "eth0" | del(.rdmaDevice) |
    .ipam.addresses[0].address = "fd00::5/64"' "$WORK/shared.json" >"$WORK/v6only.json"
run_cni ADD fkpod1 net1 "$WORK/v6only.json"
if [[ $rc == 0 ]]; then
  # IPv6-only: no RoCE v2 ::ffff: GID to check; ADD warns and succeeds.
  run_cni DEL fkpod1 net1 "$WORK/v6only.json"
  pass "IPv6-only pod: ADD succeeds without a GID to check"
else
  fail "IPv6-only ADD: $(cat "$WORK/out")"
fi
ip netns del fkpod1

# --- exclusive mode ---------------------------------------------------------------------
ip netns add fkpod2
cat >"$WORK/exclusive.json" <<JSON
{"cniVersion": "1.0.0", "name": "roce-x", "type": "fabric-cni", "mode": "exclusive",
 "rdmaDevice": "rxe0", "stateDir": "$WORK/state",
 "ipam": {"type": "static", "addresses": [{"address": "10.77.0.201/24"}]}}
JSON
run_cni ADD fkpod2 net1 "$WORK/exclusive.json"
msg=$(jq -r .msg "$WORK/out" 2>/dev/null || cat "$WORK/out")
if [[ $rc != 0 ]] && [[ $msg == *'namespace mode is "shared"'* ]] && ip link show eth0 >/dev/null 2>&1; then
  pass "exclusive mode refused while the RDMA netns mode is shared; eth0 untouched"
else
  fail "exclusive under shared netns mode (rc=$rc): $(cat "$WORK/out")"
fi
ip netns del fkpod2

# The mode can change only while no other network namespace exists.
if rdma system set netns exclusive 2>"$WORK/err"; then
  ip netns add fkpod2
  addr_before=$(ip -o -4 addr show dev eth0 | awk '{print $4}')
  run_cni ADD fkpod2 net1 "$WORK/exclusive.json"
  if [[ $rc == 0 ]]; then
    if ip netns exec fkpod2 rdma dev show | grep -q rxe0 && ! ip link show eth0 >/dev/null 2>&1; then
      pass "exclusive ADD moved eth0 and rxe0 into the pod"
    else
      fail "exclusive ADD succeeded but the pod lacks rxe0 or the host kept eth0"
    fi
    run_cni DEL fkpod2 net1 "$WORK/exclusive.json"
    if [[ $rc == 0 ]] && ip link show eth0 | grep -q 'state DOWN' && rdma dev show | grep -q rxe0; then
      pass "exclusive DEL brought eth0 (down) and rxe0 back"
    else
      fail "exclusive DEL: $(cat "$WORK/out")"
    fi
  else
    msg=$(jq -r .msg "$WORK/out" 2>/dev/null || cat "$WORK/out")
    if ip link show eth0 >/dev/null 2>&1 && ip link show eth0 | grep -q 'state UP' &&
       [[ $(ip -o -4 addr show dev eth0 | awk '{print $4}') == "$addr_before" ]] &&
       rdma dev show | grep -q rxe0 && [[ $msg == *rxe0* ]]; then
      pass "the kernel refused to move rxe0 ('$msg'); eth0 kept its name, address and state"
    else
      fail "exclusive refusal left changes behind or said too little: $msg"
    fi
  fi
  ip netns del fkpod2
  rdma system set netns shared
else
  fail "could not switch the RDMA netns mode to exclusive: $(cat "$WORK/err")"
fi

# --- a NIC that outlives its pod --------------------------------------------------------
# The pod's namespace is destroyed with the NIC in it: the kernel brings a physical NIC
# back to the initial namespace (as "net1", down, addresses gone). DEL, with the record or
# without, and GC must give it back its name, MTU and alias. A veth cannot show this (it
# dies with its namespace); the VM's virtio NIC can. rxe refuses to change namespace on
# this kernel, so the NIC moves without an RDMA device: rxe0 is deleted first. The lab's
# control path is its 9p shares, not this NIC, so moving it does not cut the node off.
NIC=${FABRIC_LAB_NETDEV:-eth0}
rdma link del rxe0
ip link set "$NIC" alias "lab uplink"
mtu_before=$(cat "/sys/class/net/$NIC/mtu")
ifindex=$(cat "/sys/class/net/$NIC/ifindex")
for version in 1.0.0 1.1.0; do
  cat >"$WORK/survivor-$version.json" <<JSON
{"cniVersion": "$version", "name": "roce-s", "type": "fabric-cni", "mode": "exclusive",
 "master": "$NIC", "mtu": 1400, "stateDir": "$WORK/state",
 "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.78.0.0/24"}]],
          "dataDir": "$WORK/ipam"}}
JSON
done
# The name of the host link with the NIC's ifindex (the kernel keeps it when it is free).
name_of_nic() {
  local dev
  for dev in /sys/class/net/*; do
    [[ $(cat "$dev/ifindex") == "$ifindex" ]] && { echo "${dev##*/}"; return 0; }
  done
  return 1
}
returned() { name_of_nic >/dev/null; }
# attach POD: ADD with the NIC, then the pod's namespace destroyed; waits (bounded) until
# the kernel has brought the NIC back.
attach_and_destroy() {
  ip netns add "$1"
  run_cni ADD "$1" net1 "$WORK/survivor-1.0.0.json"
  if [[ $rc != 0 ]] || [[ $(ip netns exec "$1" cat /sys/class/net/net1/mtu) != 1400 ]]; then
    fail "exclusive ADD of $NIC into $1: $(cat "$WORK/out" "$WORK/err")"
    return 1
  fi
  [[ ${2:-} == lose-record ]] && rm "$WORK/state/networks/roce-s/vmtest-$1:net1.json"
  ip netns del "$1"
  for _ in $(seq 200); do returned && return 0; sleep 0.1; done
  fail "$NIC (ifindex $ifindex) did not come back after $1's namespace was deleted"
  return 1
}
# restored WHAT ALIAS: the NIC is on the host under its name, MTU and alias.
restored() {
  local name
  name=$(name_of_nic || true)
  if [[ $name == "$NIC" ]] && [[ $(cat "/sys/class/net/$NIC/mtu") == "$mtu_before" ]] &&
     [[ $(cat "/sys/class/net/$NIC/ifalias") == "$2" ]]; then
    pass "$1: $NIC is back with MTU $mtu_before and alias '$2'"
  else
    fail "$1: ifindex $ifindex is '$name', MTU $(cat "/sys/class/net/$name/mtu" 2>&1), alias '$(cat "/sys/class/net/$name/ifalias" 2>&1)'"
  fi
}
leases() { ls "$WORK/ipam/roce-s" 2>/dev/null | grep -c '^10\.78\.' || true; }

if attach_and_destroy fkpod4; then
  run_cni DEL fkpod4 net1 "$WORK/survivor-1.0.0.json"
  [[ $rc == 0 ]] || fail "DEL after the namespace was destroyed: $(cat "$WORK/out")"
  restored "DEL with the record" "lab uplink"
  [[ $(leases) == 0 ]] && pass "its address was released" || fail "lease left: $(ls "$WORK/ipam/roce-s")"
fi
if attach_and_destroy fkpod5 lose-record; then
  run_cni DEL fkpod5 net1 "$WORK/survivor-1.0.0.json"
  [[ $rc == 0 ]] || fail "DEL without a record: $(cat "$WORK/out")"
  # Without a record the NIC's former alias is not known: the mark is cleared.
  restored "DEL without a record, from the NIC's mark" ""
  [[ $(leases) == 0 ]] && pass "its address was released" || fail "lease left: $(ls "$WORK/ipam/roce-s")"
fi
ip link set "$NIC" alias "lab uplink"
if attach_and_destroy fkpod6 lose-record; then
  jq '. + {"cni.dev/valid-attachments": []}' "$WORK/survivor-1.1.0.json" >"$WORK/gc.json"
  rc=0
  CNI_COMMAND=GC CNI_PATH=/usr/lib/cni "$CNI" <"$WORK/gc.json" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [[ $rc == 0 ]] || fail "GC: $(cat "$WORK/out" "$WORK/err")"
  restored "GC, from the NIC's mark" ""
  run_cni DEL fkpod6 net1 "$WORK/survivor-1.0.0.json" # the runtime's DEL still releases the address
  [[ $rc == 0 && $(leases) == 0 ]] && pass "DEL after GC released the address" || fail "DEL after GC (rc=$rc)"
fi

if [[ -n $(ls -A "$WORK/state/networks/roce" 2>/dev/null) || -n $(ls -A "$WORK/state/networks/roce-x" 2>/dev/null) ||
      -n $(ls -A "$WORK/state/networks/roce-s" 2>/dev/null) ]]; then
  fail "state left behind: $(ls "$WORK"/state/networks/*)"
fi

echo "$failures failure(s)"
exit $((failures > 0))
