#!/bin/sh
# vm tier: fabric-nccltest's mpi backend across two lab VMs (scripts/lab.sh --nodes 2).
# mpirun on node 1 starts node 2's rank over ssh: node 2 runs an sshd of its own, with a
# throw-away host key and node 1's throw-away client key, both in tmpfs, listening on the
# lab's private address only. The keys' public halves travel through FABRIC_LAB_SHARED.
#
# This is the recipe for running the mpi backend across lab nodes by hand:
#   mpirun --host A,B -np 2 --mca plm_rsh_agent "ssh -i KEY ..." \
#     --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 ... fabric-nccltest ...
#
# Usage (inside the lab, on every node): mpi_2node.sh FABRIC_NCCLTEST
set -eu
binary=$1
shared=${FABRIC_LAB_SHARED:?run through scripts/lab.sh --nodes 2}
# shellcheck disable=SC2086 # the addresses are words
set -- $FABRIC_LAB_ADDRS
addr1=$1 addr2=$2
keys=/tmp/nccltest-ssh
mkdir -p "$keys"
chmod 700 "$keys"

# Waits (bounded) for a file another node writes into the shared directory.
wait_for() {
  i=0
  while [ ! -e "$1" ]; do
    i=$((i + 1))
    [ "$i" -le $(($2 * 10)) ] || return 1
    sleep 0.1
  done
}
fail() {
  echo "mpi_2node.sh: $*" >&2
  touch "$shared/done"
  exit 1
}

case ${FABRIC_LAB_NODE:?} in
1)
  ssh-keygen -q -t ed25519 -N '' -C nccltest-lab -f "$keys/id"
  cp "$keys/id.pub" "$shared/client.pub.tmp" && mv "$shared/client.pub.tmp" "$shared/client.pub"
  wait_for "$shared/sshd-ready" 60 || fail "node 2's sshd did not come up"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  agent="ssh -i $keys/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
  status=0
  "$(readlink -f "$(command -v mpirun)")" --host "$addr1,$addr2" -np 2 \
    --mca plm_rsh_agent "$agent" --mca btl self,tcp \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    "$binary" --backend mpi -b 8 -e 1M -f 4 -n 5 -c 1 -T 120 -J "$shared/run.json" \
    >"$shared/out.txt" 2>"$shared/err.txt" || status=$?
  touch "$shared/done"
  cat "$shared/out.txt"
  [ "$status" -eq 0 ] || { cat "$shared/err.txt" >&2; fail "mpirun exited $status"; }
  grep -q "^# fabric-nccltest: backend mpi, chosen with --backend; 2 ranks on 2 nodes, launched by mpirun" \
    "$shared/out.txt" || fail "the header does not say 2 ranks on 2 nodes"
  grep -q "^#  Rank  0 Group  0 Pid .* on      node1 device -1 \[host\]" "$shared/out.txt" ||
    fail "rank 0 is not on node1"
  grep -q "^#  Rank  1 Group  0 Pid .* on      node2 device -1 \[host\]" "$shared/out.txt" ||
    fail "rank 1 is not on node2"
  grep -q "^# Out of bounds values : 0 OK$" "$shared/out.txt" || fail "wrong data"
  rows=$(awk '!/^#/ && NF == 13' "$shared/out.txt" | wc -l)
  [ "$rows" -eq 9 ] || fail "$rows result rows instead of 9 (8 B to 512 KiB)"
  grep -q '"nodes": 2' "$shared/run.json" || fail "the JSON report does not count 2 nodes"
  echo "mpi_2node.sh: the mpi backend ran across node1 and node2"
  ;;
2)
  wait_for "$shared/client.pub" 60 || fail "node 1's key did not arrive"
  cp "$shared/client.pub" "$keys/authorized_keys"
  chmod 600 "$keys/authorized_keys"
  ssh-keygen -q -t ed25519 -N '' -C nccltest-lab-host -f "$keys/host_key"
  cat >"$keys/sshd_config" <<CONFIG
ListenAddress $addr2
HostKey $keys/host_key
AuthorizedKeysFile $keys/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $keys/sshd.pid
CONFIG
  mkdir -p /run/sshd
  chmod 755 /run/sshd
  /usr/sbin/sshd -f "$keys/sshd_config" -E "$keys/sshd.log" || fail "sshd did not start: $(cat "$keys/sshd.log")"
  touch "$shared/sshd-ready"
  # Stay until node 1's run is over (its mpirun holds a session through our sshd).
  wait_for "$shared/done" 300 || fail "node 1 did not finish"
  kill "$(cat "$keys/sshd.pid")" 2>/dev/null || true
  ;;
esac
