#!/usr/bin/env bash
# Runs inside one lab VM for rdma_vs_perftest.sh: ROUNDS alternating runs of each pair.
set -euo pipefail
ROUNDS=$1 PROBE=$2
ADDR=$FABRIC_LAB_ADDR GID=$FABRIC_LAB_GID_INDEX DEV=$FABRIC_LAB_RDMA_DEV
BW_SIZE=65536 BW_ITERS=2000 LAT_SIZE=2 LAT_ITERS=2000
WORK=$(mktemp -d)
"$PROBE" server --port 0 --port-file "$WORK/port" >/dev/null 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 200); do [[ -s $WORK/port ]] && break; sleep 0.05; done
port=$(cat "$WORK/port")

# perftest's server takes one client and exits; the client is started once the server
# listens on perftest's port (18515).
perftest() { # TOOL ARGS... -> the client's output
  "$1" "${@:2}" >/dev/null 2>&1 &
  local server=$!
  for _ in $(seq 200); do ss -ltn | grep -q ':18515 ' && break; sleep 0.05; done
  "$1" "${@:2}" "$ADDR"
  wait "$server"
}
for ((i = 0; i < ROUNDS; i++)); do
  # ib_write_bw: "#bytes #iterations BW peak BW average MsgRate" -> column 4 (Gb/s).
  perftest ib_write_bw -d "$DEV" -x "$GID" -s "$BW_SIZE" -n "$BW_ITERS" --report_gbits |
    awk -v s="$BW_SIZE" '$1 == s {print $4}' >>"$WORK/perftest_bw"
  "$PROBE" bw "$ADDR" -p "$port" --op write -s "$BW_SIZE" -n "$BW_ITERS" --json |
    jq '.summary.avg_gbps' >>"$WORK/probe_bw"
  # ib_send_lat: "#bytes #iterations t_min t_max t_typical ..." -> column 5 (usec).
  perftest ib_send_lat -d "$DEV" -x "$GID" -s "$LAT_SIZE" -n "$LAT_ITERS" |
    awk -v s="$LAT_SIZE" '$1 == s {print $5}' >>"$WORK/perftest_lat"
  "$PROBE" lat "$ADDR" -p "$port" --op send -s "$LAT_SIZE" -n "$LAT_ITERS" --json |
    jq '.summary.p50_us' >>"$WORK/probe_lat"
done
for f in perftest_bw probe_bw perftest_lat probe_lat; do
  printf '%-13s %s\n' "$f" "$(paste -sd' ' "$WORK/$f")"
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
awk -v pb="$(median <"$WORK/perftest_bw")" -v fb="$(median <"$WORK/probe_bw")" \
    -v pl="$(median <"$WORK/perftest_lat")" -v fl="$(median <"$WORK/probe_lat")" \
    -v n="$ROUNDS" 'BEGIN {
  printf "rxe0 in one lab VM, median of %d alternating runs\n", n
  printf "  write bw, 64 KiB x 2000: ib_write_bw %.3f Gb/s, fabric-probe %.3f Gb/s, ratio %.2f\n", pb, fb, fb / pb
  printf "  send lat, 2 B x 2000:    ib_send_lat typical %.2f us, fabric-probe p50 %.2f us, ratio %.2f\n", pl, fl, fl / pl
}'
