#!/bin/sh
# Without CAP_NET_ADMIN, per-pod accounting says why once and every other collector works:
#   unprivileged_accounting.sh FABRIC_EXPORTER DATA_DIR   (run through run_unprivileged.sh)
set -eu
EXPORTER=$1
DATA=$(cd "$2" && pwd)
config=$(mktemp)
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$config" "$out" "$err"' EXIT
cat >"$config" <<YAML
sysfs_root: $DATA/sysfs/mlx5
collectors:
  pfc: {enabled: false}
  dcb: {enabled: false}
  accounting:
    classes: [{name: cluster, networks: [10.0.0.0/8]}]
YAML
status=0
"$EXPORTER" --config "$config" --once >"$out" 2>"$err" || status=$?
failed=0
check() { if eval "$1"; then echo "ok - $2"; else echo "not ok - $2"; failed=1; fi; }
check '[ "$status" = 0 ]' "exit status 0 (got $status)"
check 'grep -q "^fabric_accounting_active 0$" "$out"' "fabric_accounting_active 0"
check 'grep -q "^fabric_rdma_port_state{device=\"mlx5_0\",port=\"1\"} 4$" "$out"' "the RDMA collector still serves"
check '[ "$(grep -c "CAP_NET_ADMIN" "$err")" = 1 ]' "one message names CAP_NET_ADMIN"
cat "$err"
[ "$failed" = 0 ] && echo "accounting without CAP_NET_ADMIN: PASSED"
exit "$failed"
