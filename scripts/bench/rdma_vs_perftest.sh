#!/usr/bin/env bash
# rdma_vs_perftest.sh - fabric-probe bw/lat against perftest's ib_write_bw/ib_send_lat on
# the same soft-RoCE device, in the same lab VM, same message size and iterations,
# alternating runs; prints medians and ratios.
#
#   scripts/bench/rdma_vs_perftest.sh [ROUNDS] [FABRIC_PROBE_BINARY]
# Boots one lab VM (scripts/lab.sh); both sides run in it over rxe0. Figures are
# emulation-bound (QEMU TCG): only the ratio means something.
set -euo pipefail

ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROBE=$(realpath "${2:-$ROOT/build/release/probes/fabric-probe}")
exec "$ROOT/scripts/lab.sh" --timeout 900 -- \
  "$ROOT/scripts/bench/lab/rdma_vs_perftest_node.sh" "$ROUNDS" "$PROBE"
