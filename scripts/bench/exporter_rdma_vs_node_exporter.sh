#!/usr/bin/env bash
# exporter_rdma_vs_node_exporter.sh - fabric-exporter's RDMA collector against
# prometheus-node-exporter with only its infiniband collector, scraping the same soft-RoCE
# device in the same lab VM, alternating; prints medians, series counts and the ratio.
#
#   scripts/bench/exporter_rdma_vs_node_exporter.sh [ROUNDS] [FABRIC_EXPORTER]
# Root (boots one lab VM with scripts/lab.sh). Figures are those of QEMU TCG emulation:
# only the ratio means something.
set -euo pipefail

ROUNDS=${1:-25}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXPORTER=$(realpath "${2:-$ROOT/build/release/exporters/fabric-exporter}")
exec "$ROOT/scripts/lab.sh" --timeout 900 -- \
  "$ROOT/scripts/bench/lab/exporter_rdma_node.sh" "$ROUNDS" "$EXPORTER"
