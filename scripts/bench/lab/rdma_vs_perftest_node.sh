#!/usr/bin/env bash
# Runs inside one lab VM for rdma_vs_perftest.sh: ROUNDS rounds, each running perftest and
# fabric-probe back to back on the same device (the order alternates between rounds).
# For every run it keeps the bandwidth (or latency) and the CPU seconds both ends used
# (user + system, from /proc), so that each round gives a paired ratio and a CPU cost per
# GB moved: on soft-RoCE the driver's work shares the VM's vCPUs with the tools, and CPU
# a tool burns is bandwidth the device does not get.
set -euo pipefail
ROUNDS=$1 PROBE=$2
ADDR=$FABRIC_LAB_ADDR GID=$FABRIC_LAB_GID_INDEX DEV=$FABRIC_LAB_RDMA_DEV
BW_SIZE=65536 BW_ITERS=${FABRIC_BENCH_BW_ITERS:-2000} LAT_SIZE=2 LAT_ITERS=2000
WORK=$(mktemp -d)
"$PROBE" server --port 0 --port-file "$WORK/port" >/dev/null 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 200); do [[ -s $WORK/port ]] && break; sleep 0.05; done
port=$(cat "$WORK/port")
TICKS=$(getconf CLK_TCK)

# CPU seconds (user + system) a process has used, itself and its waited-for children.
cpu_of() { awk -v hz="$TICKS" '{ print ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }

# timed_run OUT CPU_OUT COMMAND...: runs COMMAND with stdout to OUT; appends the CPU
# seconds it used to CPU_OUT. A subshell runs it and, once it has reaped it, reads its own
# children's CPU time (fields 16 and 17 of its stat) with a builtin, which costs none.
timed_run() {
  local out=$1 cpu_out=$2
  shift 2
  (
    "$@" >"$out"
    status=$?
    read -r -a stat <"/proc/$BASHPID/stat"
    echo "$(((stat[15] + stat[16]))) $TICKS" | awk '{ print $1 / $2 }' >>"$cpu_out"
    exit "$status"
  )
}

# perftest's server takes one client and exits; the client is started once the server
# listens on perftest's port (18515). Both ends' CPU is counted. Under emulation perftest
# sometimes refuses to report (its CPU-clock calibration, "Can't produce a report") or
# misses the exchange with its server: such a run is tried again, at most twice.
perftest() { # KIND TOOL ARGS... -> the client's output in $WORK/KIND.out
  local kind=$1 attempt
  shift
  for attempt in 1 2 3; do
    timed_run /dev/null "$WORK/$kind.server_cpu.try" "$@" 2>/dev/null &
    local server=$!
    for _ in $(seq 200); do ss -ltn | grep -q ':18515 ' && break; sleep 0.05; done
    if timed_run "$WORK/$kind.out" "$WORK/$kind.client_cpu.try" "$@" "$ADDR" 2>"$WORK/$kind.err"; then
      wait "$server" || true
      cat "$WORK/$kind.server_cpu.try" >>"$WORK/$kind.server_cpu"
      cat "$WORK/$kind.client_cpu.try" >>"$WORK/$kind.client_cpu"
      rm -f "$WORK/$kind".*.try
      return 0
    fi
    echo "$kind: perftest failed (attempt $attempt): $(tail -n 1 "$WORK/$kind.err")" >&2
    # The server runs inside timed_run's subshell: end it by name.
    pkill -x "$(basename "$1")" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$WORK/$kind".*.try
  done
  return 1
}
# The agent's CPU during one fabric-probe run: its counters before and after.
probe_run() { # KIND ARGS...
  local kind=$1 before
  shift
  before=$(cpu_of "$agent")
  timed_run "$WORK/$kind.out" "$WORK/$kind.client_cpu" "$PROBE" "$@"
  awk -v a="$(cpu_of "$agent")" -v b="$before" 'BEGIN { print a - b }' >>"$WORK/$kind.server_cpu"
}

perftest_bw() {
  perftest perftest_bw ib_write_bw -d "$DEV" -x "$GID" -s "$BW_SIZE" -n "$BW_ITERS" --report_gbits
  # "#bytes #iterations BW peak BW average MsgRate" -> column 4 (Gb/s).
  awk -v s="$BW_SIZE" '$1 == s { print $4 }' "$WORK/perftest_bw.out" >>"$WORK/perftest_bw"
}
probe_bw() {
  probe_run probe_bw bw "$ADDR" -p "$port" --op write -s "$BW_SIZE" -n "$BW_ITERS" --json
  jq '.summary.avg_gbps' "$WORK/probe_bw.out" >>"$WORK/probe_bw"
}
perftest_lat() {
  perftest perftest_lat ib_send_lat -d "$DEV" -x "$GID" -s "$LAT_SIZE" -n "$LAT_ITERS"
  # "#bytes #iterations t_min t_max t_typical ..." -> column 5 (usec).
  awk -v s="$LAT_SIZE" '$1 == s { print $5 }' "$WORK/perftest_lat.out" >>"$WORK/perftest_lat"
}
probe_lat() {
  probe_run probe_lat lat "$ADDR" -p "$port" --op send -s "$LAT_SIZE" -n "$LAT_ITERS" --json
  jq '.summary.p50_us' "$WORK/probe_lat.out" >>"$WORK/probe_lat"
}

for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then
    perftest_bw && probe_bw && perftest_lat && probe_lat
  else
    probe_bw && perftest_bw && probe_lat && perftest_lat
  fi
done

for f in perftest_bw probe_bw perftest_lat probe_lat; do
  printf '%-13s %s\n' "$f" "$(paste -sd' ' "$WORK/$f")"
done
for f in perftest_bw probe_bw; do
  paste -d' ' "$WORK/$f.client_cpu" "$WORK/$f.server_cpu" >"$WORK/$f.cpu"
  printf '%-13s %s\n' "$f cpu" "$(awk '{ printf "%s%.2f+%.2f", (NR > 1 ? " " : ""), $1, $2 }' "$WORK/$f.cpu")"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Per round: fabric-probe / perftest (bandwidth), perftest / fabric-probe (latency: lower is
# better, so that above 1 means fabric-probe is ahead in both).
paste -d' ' "$WORK/probe_bw" "$WORK/perftest_bw" | awk '{ print $1 / $2 }' >"$WORK/bw_ratio"
paste -d' ' "$WORK/probe_lat" "$WORK/perftest_lat" | awk '{ print $1 / $2 }' >"$WORK/lat_ratio"
gb=$(awk -v s="$BW_SIZE" -v n="$BW_ITERS" 'BEGIN { print s * n / 1e9 }')
cpu_per_gb() { awk -v gb="$gb" '{ print ($1 + $2) / gb }' "$WORK/$1.cpu" | median; }
spread() { sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%.2f to %.2f", v[1], v[NR] }'; }
awk -v pb="$(median <"$WORK/perftest_bw")" -v fb="$(median <"$WORK/probe_bw")" \
  -v pl="$(median <"$WORK/perftest_lat")" -v fl="$(median <"$WORK/probe_lat")" \
  -v br="$(median <"$WORK/bw_ratio")" -v bs="$(spread "$WORK/bw_ratio")" \
  -v lr="$(median <"$WORK/lat_ratio")" -v ls="$(spread "$WORK/lat_ratio")" \
  -v pc="$(cpu_per_gb perftest_bw)" -v fc="$(cpu_per_gb probe_bw)" \
  -v n="$ROUNDS" -v iters="$BW_ITERS" 'BEGIN {
  printf "%s in one lab VM, %d rounds (order alternating), medians\n", ENVIRON["FABRIC_LAB_RDMA_DEV"], n
  printf "  write bw, 64 KiB x %d: ib_write_bw %.3f Gb/s, fabric-probe %.3f Gb/s\n", iters, pb, fb
  printf "    per-round ratio fabric-probe / ib_write_bw: median %.3f (rounds: %s)\n", br, bs
  printf "    CPU seconds per GB, both ends: ib_write_bw %.1f, fabric-probe %.1f (ratio %.2f)\n", pc, fc, fc / pc
  printf "  send lat, 2 B x 2000: ib_send_lat typical %.2f us, fabric-probe p50 %.2f us\n", pl, fl
  printf "    per-round ratio fabric-probe / ib_send_lat: median %.3f (rounds: %s)\n", lr, ls
}'
