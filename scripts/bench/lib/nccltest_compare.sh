# Shared by the fabric-nccltest benchmarks (sourced, not run): the nccl backend's check, and the
# mpi and nccl comparisons with a bare loop, which write "round size time_us" lines to $WORK/bare
# and $WORK/nccltest, one per size and round; summarize_allreduce prints the per-size medians,
# busbw from them with all_reduce's factor, their ratio, and the geometric mean of the ratios.

# require_nccl_backend NAME NCCLTEST TOOL...: exits 2 when a tool is missing from the tree,
# and 77, with fabric-nccltest's reason, where its nccl backend cannot run (no GPU).
require_nccl_backend() {
  local name=$1 nccltest=$2 tool probe
  shift 2
  for tool in "$nccltest" "$@"; do
    [[ -e $tool ]] || { echo "$name: $tool is missing (a release tree built with NCCL)" >&2; exit 2; }
  done
  if ! probe=$("$nccltest" --backend nccl -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 >/dev/null); then
    echo "$name: the nccl backend cannot run here: ${probe##*: }" >&2
    exit 77
  fi
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# size_medians WORK: "size bare_median nccltest_median" per size, in microseconds.
size_medians() {
  local work=$1 size
  for size in $(awk '{ print $2 }' "$work/bare" | sort -un); do
    echo "$size" "$(awk -v s="$size" '$2 == s { print $3 }' "$work/bare" | median)" \
      "$(awk -v s="$size" '$2 == s { print $3 }' "$work/nccltest" | median)"
  done
}

# summarize_allreduce WORK RANKS: the per-size table, then summarize_medians' line.
summarize_allreduce() {
  local work=$1 ranks=$2
  printf '%12s  %10s  %12s  %10s  %12s  %7s\n' "size (B)" "bare us" "bare GB/s" "nccltest us" "nccltest GB/s" "ratio"
  size_medians "$work" | awk -v r="$ranks" '{
    f = 2 * (r - 1) / r
    printf "%12d  %10.2f  %12.4f  %10.2f  %12.4f  %7.3f\n", $1, $2, $1 / $2 / 1e3 * f, $3, $1 / $3 / 1e3 * f, $2 / $3 }'
  summarize_medians "$work"
}

# summarize_medians WORK: the geometric mean over sizes of the per-size ratio of medians.
summarize_medians() {
  size_medians "$1" | awk '$2 > 0 && $3 > 0 { s += log($2 / $3); c++ }
    END { if (c) printf "busbw ratio nccltest/bare, geometric mean over sizes: %.3f\n", exp(s / c) }'
}

# summarize_best WORK: the same ratio from each size's fastest round of each loop. Interference
# on a machine without cores to spare (a preempted rank stalls the collective) only ever slows
# a run, so the fastest of several rounds is the figure least touched by it, where a median
# still moves with how many rounds were hit.
summarize_best() {
  local work=$1
  awk 'NR == FNR { if (!(($2) in b) || $3 < b[$2]) b[$2] = $3; next }
       { if (!(($2) in n) || $3 < n[$2]) n[$2] = $3 }
       END { for (k in b) if ((k in n) && b[k] > 0 && n[k] > 0) { s += log(b[k] / n[k]); c++ }
             if (c) printf "busbw ratio nccltest/bare, fastest round of each per size, geometric mean over sizes: %.3f\n", exp(s / c) }' \
    "$work/bare" "$work/nccltest"
}

# summarize_rounds WORK: the geometric-mean ratio of each round on its own (each round pairs one
# run of each, back to back), and their spread; a difference smaller than that spread is noise.
summarize_rounds() {
  local work=$1
  awk 'NR == FNR { bare[$1 " " $2] = $3; next }
       ($1 " " $2) in bare && $3 > 0 { s[$1] += log(bare[$1 " " $2] / $3); n[$1]++ }
       END { for (r in s) printf "%.4f\n", exp(s[r] / n[r]) }' "$work/bare" "$work/nccltest" |
    sort -g | awk '{ v[NR] = $1 } END {
      if (NR) printf "per-round geometric means: %d rounds, min %.3f, median %.3f, max %.3f\n",
        NR, v[1], (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR] }'
}
