#!/usr/bin/env bash
# demo.sh - fabrickit's main job so far, end to end on a machine without RDMA hardware:
# build, boot a two-node soft-RoCE lab (QEMU VMs with rdma_rxe on one private L2
# segment), and on each node list its RDMA devices with `fabric-probe devices`, showing
# the RoCE v2 GID that carries the node's IPv4 address.
#   scripts/demo.sh [--nodes N]     (default 2)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nodes=2
case "${1:-}" in
  "") ;;
  --nodes) nodes=${2:?--nodes needs a number} ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "demo.sh: unknown argument '$1' (try --help)" >&2; exit 1 ;;
esac

say() { printf '\n== %s\n' "$*"; }

"$REPO/scripts/setup.sh"
say "building"
build=$("$REPO/scripts/build.sh" release)
probe=$build/probes/fabric-probe
"$probe" --version

say "this host (no RDMA hardware expected)"
"$probe" devices

say "booting a $nodes-node soft-RoCE lab and listing each node's RDMA devices"
# Runs on every node; the lab prefixes each line with its node.
# shellcheck disable=SC2016 # expanded inside the VMs
"$REPO/scripts/lab.sh" --nodes "$nodes" -- sh -c '
  echo "node $FABRIC_LAB_NODE of $FABRIC_LAB_NODES: $FABRIC_LAB_NETDEV $FABRIC_LAB_ADDR"
  "$0" devices
  if "$0" devices --json | jq -e --arg addr "$FABRIC_LAB_ADDR" \
      "[.devices[].ports[].gids[] | select(.type == \"RoCE v2\" and .ipv4 == \$addr)] | length > 0" \
      >/dev/null; then
    echo "RoCE v2 GID for $FABRIC_LAB_ADDR: present"
  else
    echo "RoCE v2 GID for $FABRIC_LAB_ADDR: MISSING" >&2; exit 1
  fi' "$probe"
