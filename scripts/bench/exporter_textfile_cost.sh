#!/usr/bin/env bash
# exporter_textfile_cost.sh - what one scrape costs fabric-exporter when its textfile
# directory holds a big file: wall time per scrape (curl, gzip as Prometheus asks for it)
# and the exporter's peak resident size during that scrape (VmHWM, reset through
# /proc/PID/clear_refs before each one), for two files in turn:
#   - a file just under max_file_size (4 MiB, the default) of just under max_series
#     (10,000, the default) series, each with a 400-byte label: the most one file costs
#     under the defaults;
#   - a 4 MiB file of short series (~66,000), with max_series raised so that it is served;
#   - a file of SERIES series (1,000,000, 62 MiB), with max_file_size and max_series
#     raised so that it is served, not refused: the cost an operator accepts by raising them;
#   - the same file under the defaults (4M, 10,000 series): refused unread (too_large),
#     the cost it has on the exporter as deployed.
# Each file is touched before each scrape, so that every scrape reads and parses it again
# (an unchanged file is not); one more scrape of the unchanged file shows that cost. Prints
# medians and maxima, the resident size before the first scrape and after the last, and
# the load average.
#
#   scripts/bench/exporter_textfile_cost.sh [ROUNDS] [FABRIC_EXPORTER]
#   FILE_BYTES=4194000 SERIES=1000000 override the sizes (small values prove the script).
# No privileges; uses build/release/exporters/fabric-exporter unless told otherwise.
set -euo pipefail

ROUNDS=${1:-20}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EXPORTER=$(realpath "${2:-$ROOT/build/release/exporters/fabric-exporter}")
FILE_BYTES=${FILE_BYTES:-4194000}
SERIES=${SERIES:-1000000}
command -v curl >/dev/null || { echo "missing curl (scripts/setup.sh installs it)"; exit 1; }

# shellcheck source=scripts/lib/server_harness.sh
source "$ROOT/scripts/lib/server_harness.sh"

# One series a line, the shape a job's exporter writes: a name, two labels (the second
# PAD bytes long), a value. At most COUNT series and MAX_BYTES bytes.
series_lines() { # COUNT MAX_BYTES [PAD]
  awk -v n="$1" -v max="$2" -v pad="${3:-0}" 'BEGIN {
    tail = ""
    for (i = 0; i < pad; i++) tail = tail "x"
    bytes = 0
    line = "# HELP bench_textfile_value A series of the benchmark.\n# TYPE bench_textfile_value gauge\n"
    for (i = 0; i < n && bytes + length(line) <= max; i++) {
      printf "%s", line
      bytes += length(line)
      line = sprintf("bench_textfile_value{host=\"node-%06d\",device=\"mlx5_%d%s\"} %d\n", i / 8, i % 8, tail, i * 7)
    }
  }'
}

kib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }
status_kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$2/status"; }
has_port() { [[ -n $(exporter_port "$LOG") ]]; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# measure NAME DIR [TEXTFILE_KEYS]: starts the exporter on DIR (its one file already
# there) with TEXTFILE_KEYS added to the textfile section, scrapes ROUNDS times with the
# file touched before each, prints a summary.
measure() {
  local name=$1 dir=$2 keys=${3:+, $3}
  cat >"$WORK/$name.yaml" <<YAML
sysfs_root: $WORK/empty-sys
collectors:
  rdma: {enabled: false}
  pfc: {enabled: false}
  dcb: {enabled: false}
  textfile: {directory: $dir$keys}
YAML
  "$EXPORTER" --config "$WORK/$name.yaml" --listen 127.0.0.1:0 2>"$WORK/$name.log" &
  local pid=$!
  pids+=("$pid")
  LOG=$WORK/$name.log
  poll 15 has_port || { cat "$LOG"; exit 1; }
  local url=http://127.0.0.1:$(exporter_port "$WORK/$name.log")/metrics
  local before_rss
  before_rss=$(status_kib VmRSS "$pid")
  : >"$WORK/$name.times"
  : >"$WORK/$name.peaks"
  for ((i = 0; i < ROUNDS; i++)); do
    touch "$dir"/*.prom
    echo 5 >"/proc/$pid/clear_refs" # VmHWM back to the current resident size
    curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w '%{time_total}\n' "$url" >>"$WORK/$name.times"
    status_kib VmHWM "$pid" >>"$WORK/$name.peaks"
  done
  local after_rss unchanged
  after_rss=$(status_kib VmRSS "$pid")
  unchanged=$(curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w '%{time_total}' "$url")
  # The file was served, not skipped: its series are in the scrape.
  local served skipped
  served=$(curl -sf "$url" | grep -c '^bench_textfile_value{' || true)
  skipped=$(curl -sf "$url" | awk '/^fabric_textfile_files_skipped\{/ {s += $2} END {print s + 0}')
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  printf '%s: %s file, %d series served, %d files skipped\n' "$name" \
    "$(kib $(($(stat -c %s "$dir"/*.prom) / 1024)))" "$served" "$skipped"
  printf '  per scrape, file changed: median %.3f s (max %.3f s), peak resident median %s (max %s)\n' \
    "$(median <"$WORK/$name.times")" "$(sort -g "$WORK/$name.times" | tail -1)" \
    "$(kib "$(median <"$WORK/$name.peaks")")" "$(kib "$(sort -g "$WORK/$name.peaks" | tail -1)")"
  printf '  file unchanged: %.3f s; resident %s before the first scrape, %s after the last\n' \
    "$unchanged" "$(kib "$before_rss")" "$(kib "$after_rss")"
}

mkdir -p "$WORK/empty-sys" "$WORK/big_file" "$WORK/short_series" "$WORK/many_series"
# As many lines as fit under FILE_BYTES: the largest file the default max_file_size takes;
# 9,990 of them with a label long enough to fill it, or short ones.
series_lines 9991 "$FILE_BYTES" $((FILE_BYTES / 9990 - 60)) >"$WORK/big_file/big.prom"
series_lines "$FILE_BYTES" "$FILE_BYTES" >"$WORK/short_series/short.prom"
series_lines "$((SERIES + 1))" $((1 << 30)) >"$WORK/many_series/many.prom"
series_bytes=$(stat -c %s "$WORK/many_series/many.prom")

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$ROUNDS scrapes each, $(nproc) cores, $EXPORTER"
measure big_file_defaults "$WORK/big_file"
measure short_series "$WORK/short_series" "max_series: 10000000, timeout: 120s"
measure many_series "$WORK/many_series" \
  "max_file_size: $((series_bytes + 1)), max_series: $((SERIES + 10)), timeout: 120s"
measure many_series_defaults "$WORK/many_series"
echo "load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
